/* rt_sigreturn through a frame the program made itself, its number not set just before the syscall (as in
 * sigreturn-oriented code): every general register comes from the frame, and the frame's rip is the syscall's
 * own fall-through, so the trace shows an ordinary call (tests/test_interrupted_branches.py). */
#define _GNU_SOURCE
#include <string.h>
#include <ucontext.h>

ucontext_t frame __attribute__((aligned(64)));
volatile long after[3];

void through_frame(ucontext_t *made);
__asm__(".text\n"
        ".globl through_frame\n"
        "through_frame:\n"
        "    push %rbx\n"
        "    push %rbp\n"
        "    mov %rsp, 160(%rdi)\n" /* the frame's rsp (mcontext + 15 * 8): where this stack stands */
        "    lea resumed(%rip), %rax\n"
        "    mov %rax, 168(%rdi)\n" /* its rip: the instruction after the syscall */
        "    mov $0x1234, %ebx\n"
        "    mov $0x5678, %edx\n"
        "    mov %rsp, %rbp\n"
        "    mov %rdi, %rsp\n" /* rt_sigreturn reads the frame at rsp + 40 */
        "    mov $15, %eax\n"
        "    xchg %ax, %ax\n" /* not the mov just before the syscall */
        "    syscall\n"
        "resumed:\n"
        "    mov %rbx, after(%rip)\n"
        "    mov %rdx, after+8(%rip)\n"
        "    mov %rbp, after+16(%rip)\n"
        "    pop %rbp\n"
        "    pop %rbx\n"
        "    ret\n");

int main(void) {
    memset(&frame, 0, sizeof frame);
    frame.uc_mcontext.gregs[REG_RBX] = 0x4321;
    frame.uc_mcontext.gregs[REG_RDX] = 0x8765;
    frame.uc_mcontext.gregs[REG_RBP] = 0x9999;
    frame.uc_mcontext.gregs[REG_EFL] = 0x202;
    frame.uc_mcontext.gregs[REG_CSGSFS] = 0x33 | (0x2bL << 48);
    through_frame(&frame);
    return after[0] == 0x4321 && after[2] == 0x9999 ? 0 : 1;
}
