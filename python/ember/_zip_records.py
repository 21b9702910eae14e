"""The zip container of torch.save (PyTorch >= 1.6), written and read as PyTorch's
PyTorchStreamWriter/Reader (miniz) do: records stored uncompressed under one folder
(`archive/`, or the file's stem), each record's data 64-byte aligned by an "FB"
padding extra field, CRC and sizes in a data descriptor after the data, and a zip64
end record always. Aligned, uncompressed data is what lets ember.load(mmap=True) map
tensors straight from the file.
"""
import hashlib
import struct
import zlib

ALIGNMENT = 64
_U32 = 0xFFFFFFFF
ZIP64_LIMIT = _U32  # sizes and offsets from here on go in zip64 fields (tests lower it)
_CHUNK = 1 << 20
_LOCAL = struct.Struct("<IHHHHHIIIHH")       # local file header (30 bytes)
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")  # central directory header (46 bytes)
_MINIZ_HINT = (". This is an internal miniz error. If you are seeing this error, there is a high likelihood that "
               "your checkpoint file is corrupted. This can happen if the checkpoint was not saved properly, was "
               "transferred incorrectly, or the file was modified after saving.")


def reader_error(what):
    return RuntimeError(f"PytorchStreamReader failed reading zip archive: {what}{_MINIZ_HINT}")


class ZipRecordWriter:
    """Writes records one after another to a binary file object (offsets count from where it starts)."""

    def __init__(self, file, archive_name="archive"):
        self._file = file
        self._prefix = archive_name + "/"
        self._offset = 0
        self._entries = []  # (name bytes, crc, size, header offset)

    def _write(self, data):
        self._file.write(data)
        self._offset += memoryview(data).nbytes

    def write_record(self, name, data):
        """Appends record `name` holding `data` (bytes, str, or any buffer such as a storage)."""
        if isinstance(data, str):
            data = data.encode()
        view = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        full = (self._prefix + name).encode("utf-8")
        size, header_at = len(view), self._offset
        extra = _zip64_extra(size, header_at)
        padding = -(header_at + _LOCAL.size + len(full) + len(extra) + 4) % ALIGNMENT
        extra += struct.pack("<HH", 0x4246, padding) + b"Z" * padding  # "FB": aligns the data
        self._write(_LOCAL.pack(0x04034B50, 0, 0x0808, 0, 0, 0, 0, 0, 0, len(full), len(extra)) + full + extra)
        crc = 0
        for start in range(0, size, _CHUNK):  # CRC then write each chunk while it is in cache: one pass over RAM
            chunk = view[start:start + _CHUNK]
            crc = zlib.crc32(chunk, crc)
            self._write(chunk)
        wide = size >= ZIP64_LIMIT or header_at >= ZIP64_LIMIT
        self._write(struct.pack("<IIQQ" if wide else "<IIII", 0x08074B50, crc, size, size))
        self._entries.append((full, crc, size, header_at))

    def finish(self):
        """Writes .data/serialization_id, the central directory and the end records."""
        crcs = b"".join(struct.pack("<I", e[1]) for e in self._entries)
        names = hashlib.blake2b(b"\0".join(e[0] for e in self._entries), digest_size=8).digest()
        self.write_record(".data/serialization_id",
                          f"{zlib.crc32(crcs):020d}{int.from_bytes(names, 'little'):020d}")
        cd_start = self._offset
        for full, crc, size, header_at in self._entries:
            extra = _zip64_extra(size, header_at)
            self._write(_CENTRAL.pack(0x02014B50, 0, 45 if extra else 0, 0x0808, 0, 0, 0, crc, _field(size),
                                      _field(size), len(full), len(extra), 0, 0, 0, 0, _field(header_at))
                        + full + extra)
        count, cd_size, eocd64_at = len(self._entries), self._offset - cd_start, self._offset
        self._write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 0x031E, 45, 0, 0, count, count, cd_size, cd_start))
        self._write(struct.pack("<IIQI", 0x07064B50, 0, eocd64_at, 1))
        self._write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, min(count, 0xFFFF), min(count, 0xFFFF),
                                _field(cd_size), _field(cd_start), 0))


def _zip64_extra(size, header_at):
    """The zip64 extra field (sizes, then local header offset, for those past the limit), or b""."""
    values = ([size, size] if size >= ZIP64_LIMIT else []) + ([header_at] if header_at >= ZIP64_LIMIT else [])
    return struct.pack(f"<HH{len(values)}Q", 1, 8 * len(values), *values) if values else b""


def _field(value):
    """A 32-bit field of the central directory: the value, or 0xFFFFFFFF when it is in a zip64 field."""
    return _U32 if value >= ZIP64_LIMIT else value


def archive_name_for(path):
    """PyTorch's folder name inside the zip: the file's name without its last extension."""
    import os
    base = os.path.basename(path)
    stem = base.rsplit(".", 1)[0] if "." in base else base
    return stem or "archive"


class ZipRecordReader:
    """Reads the records of a torch.save zip from a seekable binary file object."""

    def __init__(self, file):
        import zipfile
        self._file = file
        try:
            self._zip = zipfile.ZipFile(file)
            infos = self._zip.infolist()
        except (zipfile.BadZipFile, ValueError, OSError, EOFError, struct.error, UnicodeDecodeError,
                NotImplementedError):
            raise reader_error("failed finding central directory") from None
        if not infos:
            raise RuntimeError("PytorchStreamReader failed reading zip archive: archive does not contain any files")
        first = infos[0].filename
        if "/" not in first:
            raise RuntimeError(f"file in archive is not in a subdirectory: {first}")
        prefix = first[:first.index("/") + 1]
        self._records = {}
        for info in infos:
            parts = info.filename.split("/")
            # Names are looked up, never extracted; still, a path that climbs out or is absolute is refused.
            if ".." in parts or info.filename.startswith("/") or "\\" in info.filename:
                raise RuntimeError(f"PytorchStreamReader failed reading zip archive: unsafe record name "
                                   f"{info.filename!r} (a '..' component or an absolute path)")
            if info.filename.startswith(prefix):
                self._records[info.filename[len(prefix):]] = info

    def close(self):
        self._zip.close()

    def records(self):
        return list(self._records)

    def has_record(self, name):
        return name in self._records

    def _info(self, name):
        info = self._records.get(name)
        if info is None:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not found")
        return info

    def record_size(self, name):
        return self._info(name).file_size

    def record_offset(self, name):
        """Where record `name`'s data starts in the file (read from its local header)."""
        info = self._info(name)
        header = b""
        if info.header_offset >= 0:
            self._file.seek(info.header_offset)
            header = self._file.read(_LOCAL.size)
        if len(header) != _LOCAL.size or header[:4] != b"PK\x03\x04":
            raise reader_error("invalid header or archive is corrupted")
        fields = _LOCAL.unpack(header)
        return info.header_offset + _LOCAL.size + fields[9] + fields[10]

    def read_into(self, name, buffer):
        """Fills `buffer` (writable, exactly the record's size) with record `name`'s bytes."""
        info = self._info(name)
        view = memoryview(buffer).cast("B")
        if len(view) != info.file_size:
            raise RuntimeError(f"PytorchStreamReader failed reading file {name}: record holds {info.file_size} "
                               f"bytes, expected {len(view)}" + _MINIZ_HINT)
        if info.compress_type != 0:  # re-zipped with compression: inflate (and CRC-check) it
            view[:] = self._read_compressed(info, name)
            return
        self._file.seek(self.record_offset(name))
        done = 0
        while done < len(view):
            n = self._file.readinto(view[done:])
            if not n:
                raise RuntimeError(f"PytorchStreamReader failed reading file {name}: file read failed" + _MINIZ_HINT)
            done += n

    def _read_compressed(self, info, name):
        import zipfile
        try:
            return self._zip.read(info)
        except (zipfile.BadZipFile, zlib.error, NotImplementedError, EOFError, OSError) as e:
            raise RuntimeError(f"PytorchStreamReader failed reading file {name}: {e}" + _MINIZ_HINT) from None

    def get_record(self, name):
        data = bytearray(self.record_size(name))
        self.read_into(name, data)
        return bytes(data)
