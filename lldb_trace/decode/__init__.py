"""Decoding a thread's trace into compact storage (plain Python, no ``lldb``)."""

from .decoded_thread import DecodedThread, Gap, decode_trace
from .images import process_image

__all__ = ["DecodedThread", "Gap", "decode_trace", "process_image"]
