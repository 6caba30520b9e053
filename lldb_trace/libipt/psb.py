"""The PSB packet's bytes: the pattern a decoder synchronizes on, which plain byte searches look for.

A trace without it cannot be decoded at all (a decoder starts only at a PSB); the bundle and perf.data
loaders check for it, and truncation.py steps over the packets from the last one.
"""

PSB = bytes.fromhex("0282") * 8  # the whole 16-byte packet
