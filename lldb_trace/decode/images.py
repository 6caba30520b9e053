"""libipt images built from a bundle's modules."""

from .. import libipt


def process_image(process):
    """An Image holding every executable segment of ``process``'s modules at its load address."""
    image = libipt.Image(f"pid {process.pid}")
    for module in process.modules:
        for segment in module.segments:
            if segment.executable:
                image.add_file(str(module.path), segment.offset, segment.size, segment.vaddr)
    return image
