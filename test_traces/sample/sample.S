# The bundled sample: a freestanding x86-64 program whose control flow is
# known exactly.  _start calls sum_down(3), which adds 3+2+1 in a loop, and
# exits with the sum.  Build: see make_sample.py beside this file.
        .text
        .globl _start
        .type _start, @function
_start:
        mov     $3, %edi
        call    sum_down
        mov     %eax, %edi
        mov     $60, %eax       # exit(sum)
        syscall
        .size _start, .-_start

        .globl sum_down
        .type sum_down, @function
sum_down:
        xor     %eax, %eax
.Lloop:
        add     %edi, %eax
        dec     %edi
        jnz     .Lloop
        ret
        .size sum_down, .-sum_down
        .section .note.GNU-stack,"",@progbits
