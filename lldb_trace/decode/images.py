"""libipt images built from a bundle's modules."""

from .. import libipt


def modules_image(modules, name=None):
    """An Image holding every executable segment of ``modules`` at its load address.

    libipt maps each segment's file bytes on first use, and only those the file holds
    (a segment claiming more reads as unmapped there, a decode error, never a fault).
    """
    image = libipt.Image(name)
    for module in modules:
        for segment in module.segments:
            if segment.executable and segment.size:
                image.add_file(str(module.path), segment.offset, segment.size, segment.vaddr)
    return image


def process_image(process):
    """The Image of ``process``'s modules."""
    return modules_image(process.modules, f"pid {process.pid}")
