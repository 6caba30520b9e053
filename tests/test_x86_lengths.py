"""Instruction lengths where capstone 5 has none: AVX512-FP16's EVEX maps 5 and 6 (and its map-3 forms).  The
recorder and the decoder walk code by these lengths; an instruction taken for one undecodable byte put the
recorder's packets and every later position out of step.  The encodings and lengths are GNU as's (binutils 2.40),
checked against objdump: every ModRM form (register, SIB, disp8, disp32, rip-relative, r13 and rbp bases, an
address-size prefix), masks, broadcasts, and map 3's immediate byte."""

import pytest

from lldb_trace.x86.instructions import Classifier, Transfer, evex_length

ENCODINGS = [
    ("62f57e0858c1", "vaddsh %xmm1,%xmm0,%xmm0"),
    ("62f574485810", "vaddph (%rax),%zmm1,%zmm2"),
    ("62f574c95854d801", "vaddph 0x40(%rax,%rbx,8),%zmm1,%zmm2{%k1}{z}"),
    ("62f5742858942478563412", "vaddph 0x12345678(%rsp),%ymm1,%ymm2"),
    ("62f57408581500000000", "vaddph 0x0(%rip),%xmm1,%xmm2"),
    ("62f57408585501", "vaddph 0x10(%rbp),%xmm1,%xmm2"),
    ("62d57408585500", "vaddph 0x0(%r13),%xmm1,%xmm2"),
    ("62f574585810", "vaddph (%rax){1to32},%zmm1,%zmm2"),
    ("62f57e08105f08", "vmovsh 0x10(%rdi),%xmm3"),
    ("62f57e08115c24fc", "vmovsh %xmm3,-0x8(%rsp)"),
    ("62f57d086ec8", "vmovw  %eax,%xmm1"),
    ("62f57d087ec8", "vmovw  %xmm1,%eax"),
    ("62f5fe082cc0", "vcvttsh2si %xmm0,%rax"),
    ("62f5f6082ad0", "vcvtsi2sh %rax,%xmm1,%xmm2"),
    ("62f67548b81500010000", "vfmadd231ph 0x100(%rip),%zmm1,%zmm2"),
    ("62f66d08a9d9", "vfmadd213sh %xmm1,%xmm2,%xmm3"),
    ("62f67d484cd1", "vrcpph %zmm1,%zmm2"),
    ("62f37c4866c903", "vfpclassph $0x3,%zmm1,%k1"),
    ("62f37c4866480103", "vfpclassphz $0x3,0x40(%rax),%k1"),
    ("62f37c4826d102", "vgetmantph $0x2,%zmm1,%zmm2"),
    ("62f36c080ad904", "vrndscalesh $0x4,%xmm1,%xmm2,%xmm3"),
    ("62f37c4856548c0201", "vreduceph $0x1,0x80(%rsp,%rcx,4),%zmm2"),
    ("62f36c48c2c901", "vcmpltph %zmm1,%zmm2,%k1"),
    ("62f36e08c21f02", "vcmplesh (%rdi),%xmm2,%k3"),
    ("62f67d4813d1", "vcvtph2psx %ymm1,%zmm2"),
    ("62f57c48511c18", "vsqrtph (%rax,%rbx,1),%zmm3"),
    ("6762f574485810", "vaddph (%eax),%zmm1,%zmm2"),
    ("62f66d482cd9", "vscalefph %zmm1,%zmm2,%zmm3"),
]


@pytest.mark.parametrize(("code", "text"), ENCODINGS)
def test_an_avx512_fp16_instruction_has_its_length(code, text):
    code = bytes.fromhex(code)
    padded = code + bytes.fromhex("90" * 8)  # what follows it in memory
    assert evex_length(padded) == len(code), text
    insn = Classifier(lambda address, size: padded[address - 0x1000 :][:size])[0x1000]
    assert (insn.size, insn.transfer) == (len(code), Transfer.OTHER)


@pytest.mark.parametrize("code", ["90", "c5f857c0", "62f17548fec2", "62", "62f5", "62f77d0858c1"])
def test_what_is_no_fp16_instruction_gets_no_length_here(code):
    """A NOP, VEX and map-1 EVEX (capstone's), a cut-off prefix, and an EVEX map 7 (reserved)."""
    assert evex_length(bytes.fromhex(code)) is None
