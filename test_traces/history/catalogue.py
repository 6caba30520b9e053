"""The programs of the history reference and the questions GDB answers about each (see programs.py)."""

from programs import END, LINE_WALKS, Program, common_sequences, hit, line, sequence


def recursion():
    calling_line = line("recursion.c", "int big = fact(5);")
    return Program(
        "recursion",
        ("recursion.c",),
        "recursion: five activations of fact open at once; finish/reverse-finish leave the right one",
        sequences=[
            sequence(
                "deepest activation",
                "from fact(1)'s first line: finish twice (one activation each), reverse-finish back down, "
                "reverse-step into a returning activation's closing line",
                hit("fact", 5),
                "finish",
                "finish",
                "reverse-finish",
                "reverse-finish",
                "reverse-step",
                "reverse-step",
                "reverse-next",
                "step",
                "next",
                "next",
            ),
            sequence(
                "instructions around a call",
                "stepi/nexti over `call fact`, reverse-nexti back over it, reverse-stepi into its ret",
                hit(calling_line),
                "stepi",
                "nexti",
                "reverse-nexti",
                "stepi",
                "reverse-stepi",
                "nexti",
                "reverse-stepi",
                "reverse-stepi",
                "stepi",
                "stepi",
            ),
            sequence(
                "breakpoints",
                "reverse-continue/continue to breakpoints by function, by address and by line",
                END,
                "break fact",
                "reverse-continue",
                "reverse-continue",
                "continue",
                "delete",
                "break *fact",
                "reverse-continue",
                "reverse-continue",
                "delete",
                f"break {line('recursion.c', 'return 1;')}",
                "reverse-continue",
                "reverse-continue",
                "continue",
                "continue",
                "delete",
                "reverse-continue",
            ),
            sequence(
                "record goto",
                "record goto N, begin and end",
                END,
                "record goto 10",
                "record goto 100",
                "record goto 3",
                "record goto begin",
                "record goto 50",
                "record goto end",
                "record goto 0",
            ),
        ],
    )


def lines():
    return Program(
        "lines",
        ("lines.c",),
        "lines made of several line-table rows: a multi-line statement, three statements on one line, "
        "a for loop whose condition line is revisited, a function ending in `}`",
        sequences=[
            sequence(
                "three statements on a line",
                "mid-line reverse-step goes to the line's first instruction, not to a later row",
                hit(line("lines.c", "c = a; a = b; b = c;")),
                "stepi",
                "stepi",
                "stepi",
                "reverse-step",
                "next",
                "reverse-next",
                "reverse-next",
            ),
            sequence(
                "for loop",
                "next through the loop (the for line comes back each iteration), then reverse-next and "
                "reverse-step through it",
                hit(line("lines.c", "int sum = 0;")),
                *["next"] * 9,
                *["reverse-next"] * 9,
                *["reverse-step"] * 6,
            ),
            sequence(
                "into weigh and out",
                "step into a two-line call (after the prologue), finish to mid-line, reverse-step into "
                "the callee's closing brace, reverse-finish to the call",
                hit(line("lines.c", "sum += weigh(values[i],"), 2),
                "step",
                "finish",
                "reverse-step",
                "reverse-step",
                "reverse-finish",
                "reverse-step",
                "step",
                "step",
                "step",
                "step",
                "step",
            ),
        ],
    )


def qsort_callback():
    return Program(
        "qsort_callback",
        ("qsort_callback.c",),
        "callbacks from a library without line information: glibc's qsort calls compare()",
        sequences=[
            sequence(
                "inside the comparator",
                "bt through qsort's frames; finish into qsort (no line info); leaving compare backward",
                hit("compare", 2),
                "finish",
                "reverse-finish",
                "reverse-step",
                "reverse-step",
                "step",
                "step",
                "next",
                "next",
                "next",
            ),
            sequence(
                "step from the qsort line",
                "step at a line calling a function without line info that calls back into one with it",
                hit(line("qsort_callback.c", "qsort(values")),
                "step",
                "reverse-step",
                "break compare",
                "step",
                "reverse-step",
                "reverse-continue",
                "continue",
            ),
            sequence(
                "last comparison",
                "reverse-continue from the end to the last compare call, by function and by line",
                END,
                "break compare",
                "reverse-continue",
                "delete",
                f"break {line('qsort_callback.c', 'calls++;')}",
                "reverse-continue",
                "reverse-continue",
                "continue",
            ),
        ],
    )


def nodebug():
    return Program(
        "nodebug",
        ("nodebug.c",),
        "functions without debug information (nodebug_lib.c, no -g): one leaf, one that calls back",
        nodebug_sources=("nodebug_lib.c",),
        sequences=[
            sequence(
                "inside opaque_scale",
                "reverse-step/step from inside a function without line info; finish and reverse-finish",
                hit("*opaque_scale"),
                "stepi",
                "stepi",
                "reverse-step",
                "stepi",
                "step",
                "reverse-finish",
                "stepi",
                "stepi",
                "finish",
            ),
            sequence(
                "inside visible, called from opaque_apply",
                "bt through a frame without line info; finish into it; reverse-step out of visible",
                hit("visible"),
                "finish",
                "reverse-finish",
                "reverse-step",
                "reverse-step",
                "step",
                "step",
            ),
            sequence(
                "step with a breakpoint in the callback",
                "step over opaque_apply stops at a breakpoint in visible",
                hit(line("nodebug.c", "int applied = opaque_apply(visible, scaled);")),
                "break visible",
                "step",
                "delete",
                "reverse-step",
                "reverse-step",
                "reverse-next",
            ),
        ],
    )


def longjmp():
    return Program(
        "longjmp",
        ("longjmp.c",),
        "setjmp/longjmp out of six nested frames, then more calls",
        sequences=[
            sequence(
                "at the longjmp",
                "bt six frames deep; next and step over longjmp land back at setjmp's return in main",
                hit("level6"),
                "next",
                "reverse-step",
                "reverse-next",
                "step",
                "reverse-stepi",
                "stepi",
                "finish",
            ),
            sequence(
                "after the longjmp",
                "bt in after() shows main alone below it; reverse-step and reverse-finish across the jump",
                hit("after"),
                "reverse-step",
                "reverse-step",
                "reverse-step",
                "reverse-finish",
                "step",
                "step",
                "step",
            ),
        ],
    )


def exceptions():
    return Program(
        "exceptions",
        ("exceptions.cpp",),
        "a C++ exception thrown five frames deep and caught in main, then more calls",
        sequences=[
            sequence(
                "at the throw",
                "bt five frames deep; next over the throw lands in the handler; reverse-step back",
                hit("f5"),
                "next",
                "reverse-step",
                "reverse-next",
                "reverse-finish",
                "finish",
            ),
            sequence(
                "in the handler",
                "bt in the catch block and in after() shows main alone; reverse-step out of the handler",
                hit(line("exceptions.cpp", "code = problem.code;")),
                "reverse-step",
                "reverse-step",
                "reverse-next",
                "next",
                "next",
                "step",
                "reverse-finish",
            ),
        ],
    )


def tailcall():
    return Program(
        "tailcall",
        ("tailcall.c",),
        "tail calls at -O2: middle() jumps to leaf(), which returns straight to outer()",
        flags=("-O2", "-g", "-static", "-no-pie"),
        line_walks=False,
        sequences=[
            sequence(
                "inside leaf",
                "bt inside the tail-called leaf; finish returns into outer; reverse-finish/reverse-step back",
                hit("leaf"),
                "finish",
                "reverse-finish",
                "reverse-step",
                "reverse-step",
                "step",
                "reverse-finish",
            ),
            sequence(
                "step into optimized code",
                "step into middle, which sets up no frame pointer: GDB stops at its first instruction, not "
                "at the end of its first line-table row; finish goes on past its tail call to outer",
                hit(line("tailcall.c", "int result = middle(value + 1);")),
                "step",
                "finish",
            ),
            sequence(
                "through the jmp",
                "stepi from middle through its jmp into leaf, bt before and after, reverse-stepi back",
                hit("*middle"),
                "stepi",
                "stepi",
                "stepi",
                "stepi",
                "stepi",
                "reverse-stepi",
                "reverse-stepi",
                "finish",
            ),
        ],
    )


def contexts():
    return Program(
        "contexts",
        ("contexts.c",),
        "makecontext/swapcontext to a task on its own stack, back to main, into the task again",
        sequences=[
            sequence(
                "in the task",
                "bt on the task's stack; reverse-step back across the swapcontext that started it",
                hit("task"),
                "reverse-step",
                "reverse-step",
                "step",
                "next",
                "next",
                "next",
            ),
            sequence(
                "each work call",
                "bt in work() on main's stack and on the task's",
                hit("work", 1),
                "break work",
                "continue",
                "continue",
                "reverse-continue",
                "reverse-continue",
                "finish",
                "reverse-finish",
            ),
            sequence(
                "back in main",
                "after the first swapcontext returns: reverse-step and reverse-next across it",
                hit(line("contexts.c", "work(100);")),
                "reverse-step",
                "reverse-next",
                "next",
                "next",
                "next",
            ),
        ],
    )


def signal_handler():
    return Program(
        "signal_handler",
        ("signal_handler.c",),
        "a signal handler that runs (raise() three calls deep) and returns",
        sequences=[
            sequence(
                "in the handler",
                "bt through the signal frame; finish out of the handler and of note()",
                hit("note"),
                "finish",
                "finish",
                "reverse-finish",
                "reverse-step",
                "reverse-step",
                "reverse-step",
            ),
            sequence(
                "after raise returns",
                "reverse-step/reverse-next back across raise() and the handler it ran",
                hit(line("signal_handler.c", "seen += 1;")),
                "reverse-next",
                "next",
                "reverse-step",
                "reverse-step",
                "step",
                "step",
            ),
        ],
    )


def gradebook():
    return Program(
        "gradebook",
        ("gradebook.c",),
        "the README's bug hunt: add_mark's off-by-one overwrites the course pointer; a crash follows later",
        stop=None,
        sequences=[
            sequence(
                "the bug hunt",
                "from the crash: back to average's end, out of it, back to the fifth add_mark, forward to the write",
                END,
                "reverse-step",
                "reverse-step",
                "reverse-step",
                "reverse-finish",
                "break add_mark",
                "reverse-continue",
                "delete",
                "next",
                "next",
                "next",
                "reverse-finish",
            ),
        ],
    )


PROGRAMS = [
    recursion(),
    lines(),
    qsort_callback(),
    nodebug(),
    longjmp(),
    exceptions(),
    tailcall(),
    contexts(),
    signal_handler(),
    gradebook(),
]
BY_NAME = {program.name: program for program in PROGRAMS}


def sequences_of(program):
    common = common_sequences(program.name)
    if not program.line_walks:
        common = [sequence for sequence in common if sequence["name"] not in LINE_WALKS]
    return common + program.sequences
