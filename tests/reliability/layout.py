"""Where each structure of a backup lies, byte by byte: the regions of a piece
(docs/piece-format.md), of a catalog log and of a catalog autobackup
(docs/catalog-format.md), read independently of
the engine's own decoders so the bit-flip campaign can aim at each of them.

A region is (name, start, end, protected): `protected` is true when the format covers the
bytes with a checksum, a CRC or an authentication tag, so changing any of them must be
noticed by a reader that checks what the format defines (the piece checksum covers the
whole header block and the first 64 bytes of every frame header; frame payloads, the
trailer and the footer have CRCs of their own; every catalog byte is under a CRC). The rest
(the unused part of frame header blocks, the padding after payloads and the footer's unused
bytes) is protected by nothing and may change harmlessly.
"""

import struct

BLOCK = 4096
KEY_SLOT = 120  # bytes of a key slot block in use (version 4)
FRAME_HEADER = 64
FOOTER_USED = 28  # magic, trailer offset, frame count, piece checksum, CRC
FRAME_MAGIC = 0x52464253
FRAME_TYPES = {1: "data", 2: "zero", 3: "file-record", 4: "trailer", 5: "map"}
RECORD_TYPES = {1: "begin", 2: "piece", 3: "files", 4: "end", 7: "job"}
CATALOG_HEADER = 24
RECORD_HEADER = 24


def align_up(n):
    return (n + BLOCK - 1) // BLOCK * BLOCK


def u8(b, o):
    return b[o]


def u16(b, o):
    return struct.unpack_from("<H", b, o)[0]


def u32(b, o):
    return struct.unpack_from("<I", b, o)[0]


def u64(b, o):
    return struct.unpack_from("<Q", b, o)[0]


class LayoutError(Exception):
    pass


def _trailer_regions(payload, base):
    """File table and extent index of a plain trailer payload starting at piece offset
    `base`."""
    table, index = [(base, base + 5)], []  # version, file count
    nfiles = u32(payload, 1)
    p = 5
    for _ in range(nfiles):
        start = p
        p += 4                       # file id
        p += 4 + u32(payload, p)     # path
        p += 8 + 4 + 8 + 4 + 4 + 16  # size, mode, mtime, uid, gid, digest
        extents = u32(payload, p)
        p += 4
        table.append((base + start, base + p))
        index.append((base + p, base + p + 41 * extents))
        p += 41 * extents
    if u8(payload, 0) >= 2:  # version 2: the digest map index of each file follows
        for _ in range(nfiles):
            maps = u32(payload, p)
            index.append((base + p, base + p + 4 + 28 * maps))
            p += 4 + 28 * maps
    if u8(payload, 0) >= 3:  # version 3: each file's ctime and inode as it was opened
        table.append((base + p, base + p + 16 * nfiles))
        p += 16 * nfiles
    if p > len(payload):
        raise LayoutError("trailer payload is shorter than its file table says")
    return table, index


def piece_regions(data):
    """Regions of the piece `data` (its bytes). Raises LayoutError when it is not a
    well-formed piece."""
    if data[:8] != b"SBPIECE1" or len(data) % BLOCK or len(data) < 3 * BLOCK:
        raise LayoutError("not a piece")
    regs = []
    body = u16(data, 10)
    cipher = u8(data, 37)
    name_end = 68 + u32(data, 64)
    keys_end = body - 8 if u16(data, 8) >= 2 else body  # version 2 ends with the catalog id
    if cipher:
        regs += [("piece-header", 0, name_end, True),
                 ("piece-header-keys", name_end, keys_end, True),
                 ("piece-header", keys_end, body + 4, True)]
    else:
        regs.append(("piece-header", 0, body + 4, True))
    regs.append(("piece-header-pad", body + 4, BLOCK, True))  # under the piece checksum
    off = BLOCK
    if cipher and u16(data, 8) >= 4:
        # Version 4: two key slot blocks. Slot 0 holds the wrap under its own CRC32C (a
        # changed byte leaves the piece without a valid slot: corrupt); the rest of its
        # block and the empty slot 1 are read by nothing that matters (a slot that fails
        # its check is ignored).
        regs += [("key-slot", BLOCK, BLOCK + KEY_SLOT, True),
                 ("key-slot-pad", BLOCK + KEY_SLOT, 2 * BLOCK, False),
                 ("key-slot-empty", 2 * BLOCK, 3 * BLOCK, False)]
        off = 3 * BLOCK
    footer = len(data) - BLOCK
    trailer_at = u64(data, footer + 8)
    while True:
        if off >= footer or u32(data, off) != FRAME_MAGIC:
            raise LayoutError(f"no frame header at {off}")
        kind = FRAME_TYPES.get(u8(data, off + 4))
        if kind is None:
            raise LayoutError(f"unknown frame type at {off}")
        flags = u8(data, off + 5)
        stored = u32(data, off + 28)
        pay = off + BLOCK
        regs += [(f"{kind}-frame-header", off, off + FRAME_HEADER, True),
                 (f"{kind}-frame-header-pad", off + FRAME_HEADER, pay, False)]
        if kind == "trailer" and not cipher:
            table, index = _trailer_regions(data[pay:pay + stored], pay)
            regs += [("trailer-file-table", s, e, True) for s, e in table]
            regs += [("trailer-index", s, e, True) for s, e in index if e > s]
        elif kind == "trailer":
            regs.append(("trailer-payload", pay, pay + stored, True))
        elif stored:
            name = "data-payload-zstd" if kind == "data" and flags & 1 else f"{kind}-payload"
            regs.append((name, pay, pay + stored, True))
        if align_up(stored) > stored:
            regs.append((f"{kind}-payload-pad", pay + stored, pay + align_up(stored), False))
        if kind == "trailer":
            if off != trailer_at:
                raise LayoutError(f"trailer at {off}, the footer says {trailer_at}")
            break
        off = pay + align_up(stored)
    regs += [("footer", footer, footer + FOOTER_USED, True),
             ("footer-pad", footer + FOOTER_USED, len(data), False)]
    return regs


def catalog_regions(data):
    """Regions of a catalog log: its file header, and the frame header and payload of each
    record by type. Every catalog byte is under a CRC."""
    if len(data) < CATALOG_HEADER:
        raise LayoutError("catalog log shorter than its header")
    regs = [("catalog-file-header", 0, CATALOG_HEADER, True)]
    off = CATALOG_HEADER
    while off < len(data):
        if off + RECORD_HEADER > len(data):
            raise LayoutError(f"torn record header at {off}")
        length = u32(data, off + 4)
        kind = RECORD_TYPES.get(u16(data, off + 20), "unknown")
        end = off + RECORD_HEADER + length
        if end > len(data):
            raise LayoutError(f"torn record at {off}")
        regs += [(f"catalog-{kind}-header", off, off + RECORD_HEADER, True),
                 (f"catalog-{kind}-payload", off + RECORD_HEADER, end, True)]
        off = end
    return regs


AUTOBACKUP_HEADER = 64


def autobackup_regions(data):
    """Regions of a catalog autobackup (`sb-catalog-*.sbcat`): its 64-byte header (bytes
    0..51 under the header CRC, 52..63 zero and under nothing), the key block of a sealed
    one (a piece header: its body and CRC, then padding no checksum covers), and the body,
    under the body CRC (and the seal's tag)."""
    if data[:8] != b"SBCATBK1" or len(data) < AUTOBACKUP_HEADER:
        raise LayoutError("not a catalog autobackup")
    regs = [("autobackup-header", 0, 52, True),
            ("autobackup-header-pad", 52, AUTOBACKUP_HEADER, False)]
    off = AUTOBACKUP_HEADER
    if u16(data, 10) & 1:  # sealed: a piece header block with the wrapped key
        block = data[off:off + BLOCK]
        if block[:8] != b"SBPIECE1":
            raise LayoutError("sealed autobackup without its key block")
        body = u16(block, 10)
        regs += [("autobackup-key-header", off, off + body + 4, True),
                 ("autobackup-key-header-pad", off + body + 4, off + BLOCK, False)]
        off += BLOCK
    length = u64(data, 36)
    if off + length != len(data):
        raise LayoutError(f"autobackup body of {length} bytes at {off}, file of {len(data)}")
    regs.append(("autobackup-body", off, off + length, True))
    return regs


def region_at(regs, offset):
    for name, s, e, prot in regs:
        if s <= offset < e:
            return name, prot
    return "unmapped", True
