# Instructions whose address or operand size is not what the operands' registers suggest: each left a wrong value
# in the recovery from the end core alone once (tests/test_addressing_forms.py).  No libc: build with
#   gcc -nostdlib -static -o addressing_forms addressing_forms.S
# and record with --from-start.  It ends in a store to address 0, so its end state is a fault's.
.intel_syntax noprefix
.globl _start

.data
early:   .quad 0x1111111111111111
late:    .quad 0x2222222222222222
pattern: .quad 0x5555555555555555

.text
.macro MAP_PAGE at                 # mmap(at, 4096, read|write, private|anonymous|fixed, -1, 0)
    mov eax, 9
    mov rdi, \at
    mov esi, 4096
    mov edx, 3
    mov r10d, 0x32
    mov r8, -1
    xor r9d, r9d
    syscall
.endm
.macro SET_BASE code, offset       # arch_prctl(code, offset): ARCH_SET_GS 0x1001, ARCH_SET_FS 0x1002
    mov eax, 158
    mov edi, \code
    mov rsi, \offset
    syscall
.endm

_start:
    # lea computes an effective address: a segment override adds no base (rax = rbx, not fs_base + rbx)
    lea r12, [rip + early]
    SET_BASE 0x1002, r12
    mov rbx, 0x3000
    lea rax, fs:[rbx]
    mov r13, rax
    xor eax, eax
    xor r13d, r13d

    # loading gs's selector replaces its base: the load through gs before it used the old one
    lea r12, [rip + late]
    lea r14, [rip + early]
    sub r12, r14
    SET_BASE 0x1001, r12               # gs_base = late - early
    mov r13, gs:[early]                # reads late
    add r13, 3
    xor r13d, r13d
    mov ax, 0x2b
    mov gs, ax

    # an address-size prefix: ebx, edi, not rbx, rdi (low holds zeros, high = low + 4 GiB holds 0xbb...)
    MAP_PAGE 0x20000000
    MAP_PAGE 0x120000000
    mov rax, 0xbbbbbbbbbbbbbbbb
    mov rbx, 0x120000000
    mov [rbx], rax
    mov [rbx + 32], rax
    movq xmm2, qword ptr [ebx]         # a vector load at low
    movq r13, xmm2
    add r13, 1
    xor r13d, r13d
    mov r14, [0x20000020]              # low + 32, before a copy to it
    add r14, 1
    xor r14d, r14d
    mov rdi, 0x120000020
    lea rsi, [rip + pattern]
    mov ecx, 8
    addr32 rep movsb                   # writes at edi
    mov r15, [0x20000040]              # low + 64, before a bit set in it
    add r15, 1
    xor r15d, r15d
    mov rbx, 0x120000040
    mov eax, 9
    bts dword ptr [ebx], eax
    mov r13, [0x20000060]              # low + 96, before a vector store to it
    add r13, 1
    xor r13d, r13d
    mov rax, 0x7777777777777777
    movq xmm3, rax
    mov rbx, 0x120000060
    movq qword ptr [ebx], xmm3

    # leave with an operand-size prefix: rsp = rbp + 2, and only bp is loaded
    mov r12, rsp
    sub rsp, 128
    mov rax, 0x0123456789abcdef
    mov [r12 - 40], rax
    lea rbp, [r12 - 40]
    .byte 0x66, 0xc9
    mov r14, rsp
    add r14, 1
    xor r14d, r14d
    mov rsp, r12

    xor eax, eax
    mov dword ptr [0], eax
