"""Memory asked a byte at a time (the recovery asks each byte of each access) from a reader of spans, read a
page at a time and kept."""

_PAGE = 4096


class PagedMemory:
    """Memory read byte by byte, a page at a time, from ``read(address, size)`` (the bytes known from address on).
    A known state may know a page from its middle on: ``single`` asks each byte past a short page by itself."""

    def __init__(self, read, single=False):
        self._read, self._single = read, single
        self._pages, self._bytes = {}, {}

    def __call__(self, byte):
        page = byte - byte % _PAGE
        data = self._pages.get(page)
        if data is None:
            data = self._pages[page] = self._read(page, _PAGE) or b""
        offset = byte - page
        if offset < len(data):
            return data[offset]
        if not self._single:
            return None
        if byte not in self._bytes:
            found = self._read(byte, 1)
            self._bytes[byte] = found[0] if found else None
        return self._bytes[byte]
