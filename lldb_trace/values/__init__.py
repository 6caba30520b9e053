"""Values in the past: what a thread's registers and memory held at any position of its history.

A trace records which instructions ran, not the data they used.  Values come
from known states (a core file at the trace's end, the state a recorder saved
where recording started) and are carried along the trace by the instructions'
semantics, forward and backward, as REPT does (OSDI 2018).  A value that the
known states and the trace do not determine stays unknown: never a guess.

Known states:

- ``machine_state.MachineState``: registers and readable memory of one moment;
- ``core_file``: ELF core files read (``open_core``); ``core_match``: checked against a trace when loaded;
- ``core_writer``: ELF core files written from a stopped process (the recorders, ``trace save``);

The recovery (``recovery.ThreadValues``: the values at every position of one thread):

- ``semantics``, ``effects``, ``classify``, ``vector``, ``registers``: what one instruction reads and writes
  (capstone), sorted into the kinds the rules know;
- ``rules`` (forward and backward), ``emulator`` (unicorn, for the rest whose inputs are known);
- ``structure``, ``generations``, ``chunk``: one window of positions solved to a fixed point;

And what the rest of the package asks: ``process_values`` (a traced process's known states and its threads'
recoveries, made on first use) and ``accesses`` ("who wrote this?").

The engine's hot modules run compiled where setup.py could build them (``engine_build``; ``ENGINE``
says which run).  No ``lldb`` here.
"""

from pathlib import Path

from .engine_build import guard

ENGINE = guard(__name__, Path(__file__).parent)
