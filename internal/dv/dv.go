package dv

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/google/uuid"

	"github.com/skiplake/skiplake/storage"
)

// Magic is the number in front of every serialized bitmap (stored little-endian).
const Magic = 1681511377

// FormatVersion is the version byte at the start of a DV file.
const FormatVersion = 1

// Storage types of a Descriptor.
const (
	StorageUUID     = "u" // file deletion_vector_<uuid>.bin under an optional prefix
	StorageInline   = "i" // Z85 bitmap bytes in the log
	StorageAbsolute = "p" // absolute path (URI)
)

// Descriptor is the log's deletionVector object.
type Descriptor struct {
	// StorageType is "u", "i" or "p".
	StorageType string
	// PathOrInlineDv is the random prefix plus Z85-encoded UUID ('u'), the Z85 bitmap
	// ('i') or the absolute path ('p').
	PathOrInlineDv string
	// Offset is where the DV starts in its file (the dataSize field); 0 if absent.
	Offset int32
	// SizeInBytes is the size of the serialized bitmap (magic number included).
	SizeInBytes int32
	// Cardinality is the number of deleted rows.
	Cardinality int64
}

// UniqueID identifies the DV for log reconciliation: storage type, path or inline data,
// and "@offset" when the offset is set.
func (d Descriptor) UniqueID() string {
	id := d.StorageType + d.PathOrInlineDv
	if d.Offset != 0 {
		id += "@" + strconv.FormatInt(int64(d.Offset), 10)
	}
	return id
}

// RelativePath returns the DV file's path relative to the table root. tableRoot (a path or
// URI) is needed only for 'p' descriptors, which must point inside it (invariant V2).
// Inline descriptors have no file and return an error.
func (d Descriptor) RelativePath(tableRoot string) (string, error) {
	switch d.StorageType {
	case StorageUUID:
		s := d.PathOrInlineDv
		if len(s) < 20 {
			return "", fmt.Errorf("%w: 'u' path %q shorter than 20 characters", ErrInvalidDescriptor, s)
		}
		prefix, enc := s[:len(s)-20], s[len(s)-20:]
		raw, err := DecodeZ85(enc)
		if err != nil {
			return "", fmt.Errorf("%w: uuid of %q: %w", ErrInvalidDescriptor, s, err)
		}
		id, err := uuid.FromBytes(raw)
		if err != nil {
			return "", fmt.Errorf("%w: uuid of %q: %w", ErrInvalidDescriptor, s, err)
		}
		name := "deletion_vector_" + id.String() + ".bin"
		if prefix == "" {
			return name, nil
		}
		if strings.HasPrefix(prefix, "/") || strings.Contains(prefix, "..") || strings.Contains(prefix, "\\") {
			return "", fmt.Errorf("%w: bad prefix %q", ErrInvalidDescriptor, prefix)
		}
		return prefix + "/" + name, nil
	case StorageAbsolute:
		return relativeUnder(tableRoot, d.PathOrInlineDv)
	case StorageInline:
		return "", fmt.Errorf("%w: inline deletion vector has no file", ErrInvalidDescriptor)
	}
	return "", fmt.Errorf("%w: unknown storage type %q", ErrInvalidDescriptor, d.StorageType)
}

func relativeUnder(root, abs string) (string, error) {
	if root == "" {
		return "", fmt.Errorf("%w: %q (no table root given)", ErrOutsideTable, abs)
	}
	ru, err1 := url.Parse(root)
	au, err2 := url.Parse(abs)
	if err1 != nil || err2 != nil {
		return "", fmt.Errorf("%w: cannot parse %q or root %q", ErrInvalidDescriptor, abs, root)
	}
	scheme := func(u *url.URL) string {
		if u.Scheme == "" {
			return "file"
		}
		return strings.ToLower(u.Scheme)
	}
	if scheme(ru) != scheme(au) || ru.Host != au.Host || !strings.HasPrefix(au.Path, "/") {
		return "", fmt.Errorf("%w: %q is not under %q", ErrOutsideTable, abs, root)
	}
	rp := strings.TrimSuffix(path.Clean("/"+ru.Path), "/")
	ap := path.Clean(au.Path)
	if !strings.HasPrefix(ap, rp+"/") {
		return "", fmt.Errorf("%w: %q is not under %q", ErrOutsideTable, abs, root)
	}
	return ap[len(rp)+1:], nil
}

// MagicNative is the magic number of Delta's older "native" RoaringBitmapArray layout
// (stored little-endian), which Delta's own reader still accepts and skiplake therefore
// reads too; nothing writes it (Spark writes the portable format, see Magic).
const MagicNative = 1681511376

// ParseBitmap decodes magic number + 64-bit RoaringBitmap bytes (an inline DV, or the
// bitmapData of a DV in a file). The portable format (magic 1681511377, PROTOCOL.md
// "Deletion Vector Format") is what every writer produces; Delta's older native layout
// (magic 1681511376) is accepted as Delta's reader accepts it. All bytes must be
// consumed, and no row position may have its top bit set.
func ParseBitmap(data []byte) (*roaring64.Bitmap, error) {
	if len(data) < 4 {
		return nil, fmt.Errorf("%w: %d bytes, too short for the magic number", ErrCorrupt, len(data))
	}
	portable := data[4:]
	switch m := binary.LittleEndian.Uint32(data); m {
	case Magic:
	case MagicNative:
		var err error
		if portable, err = nativeToPortable(data[4:]); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: magic number %d, want %d", ErrCorrupt, m, Magic)
	}
	bm := roaring64.New()
	rd := bytes.NewReader(portable)
	if _, err := bm.ReadPortableFrom(rd); err != nil {
		return nil, fmt.Errorf("%w: bitmap: %w", ErrCorrupt, err)
	}
	if rd.Len() != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after the bitmap", ErrCorrupt, rd.Len())
	}
	if err := bm.Validate(); err != nil {
		return nil, fmt.Errorf("%w: bitmap: %w", ErrCorrupt, err)
	}
	if !bm.IsEmpty() && bm.Maximum()>>63 != 0 {
		return nil, fmt.Errorf("%w: row position %d has the top bit set", ErrCorrupt, bm.Maximum())
	}
	return bm, nil
}

// nativeToPortable rewrites the native layout's headers into the portable one. Native:
// | count int32 LE | per bucket i = 0..count-1: | size int32 LE | 32-bit RoaringBitmap (size bytes) | |,
// where bucket i holds the rows whose high 32 bits are i. Portable: | count uint64 LE |
// per non-empty bucket: | key uint32 LE | 32-bit RoaringBitmap | |. The 32-bit bitmaps
// are the same standard format in both, so they are copied, after checking that each
// parses and is exactly size bytes long.
func nativeToPortable(data []byte) ([]byte, error) {
	if len(data) < 4 {
		return nil, fmt.Errorf("%w: native bitmap: %d bytes, too short for the bucket count", ErrCorrupt, len(data))
	}
	count := int64(int32(binary.LittleEndian.Uint32(data)))
	data = data[4:]
	if count < 0 || count > int64(len(data))/4 {
		return nil, fmt.Errorf("%w: native bitmap: bucket count %d for %d bytes", ErrCorrupt, count, len(data))
	}
	out := make([]byte, 8, 8+len(data))
	var kept uint64
	for key := range count {
		if len(data) < 4 {
			return nil, fmt.Errorf("%w: native bitmap: bucket %d: truncated size", ErrCorrupt, key)
		}
		size := int64(int32(binary.LittleEndian.Uint32(data)))
		data = data[4:]
		if size < 0 || size > int64(len(data)) {
			return nil, fmt.Errorf("%w: native bitmap: bucket %d: size %d, %d bytes left", ErrCorrupt, key, size, len(data))
		}
		b32 := roaring.New()
		n, err := b32.ReadFrom(bytes.NewReader(data[:size]))
		if err != nil || n != size {
			return nil, fmt.Errorf("%w: native bitmap: bucket %d: read %d of %d bytes: %v", ErrCorrupt, key, n, size, err)
		}
		if !b32.IsEmpty() {
			out = binary.LittleEndian.AppendUint32(out, uint32(key))
			out = append(out, data[:size]...)
			kept++
		}
		data = data[size:]
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after the native bitmap", ErrCorrupt, len(data))
	}
	binary.LittleEndian.PutUint64(out, kept)
	return out, nil
}

// Deleted is a loaded deletion vector. A nil *Deleted deletes nothing. It is safe for
// concurrent reads.
type Deleted struct {
	bm *roaring64.Bitmap
}

// Contains reports whether the row at file position row is deleted.
func (d *Deleted) Contains(row uint64) bool { return d != nil && d.bm.Contains(row) }

// Cardinality is the number of deleted rows.
func (d *Deleted) Cardinality() uint64 {
	if d == nil {
		return 0
	}
	return d.bm.GetCardinality()
}

// CheckRows checks that every row position d deletes names a row of a data file of
// numRows rows (invariant V5); a position at or beyond numRows is ErrInvalidRows,
// naming the highest one. It is the one check every reader of a deletion vector makes
// before applying it or counting with it: a vector that names rows a file does not
// have comes from a damaged or foreign log, and no answer computed with it is right.
func (d *Deleted) CheckRows(numRows int64) error {
	if d == nil || d.bm.IsEmpty() {
		return nil
	}
	if numRows < 0 {
		return fmt.Errorf("%w: negative row count %d", ErrInvalidRows, numRows)
	}
	if m := d.bm.Maximum(); m >= uint64(numRows) {
		return fmt.Errorf("%w: the deletion vector deletes row %d of a file of %d rows", ErrInvalidRows, m, numRows)
	}
	return nil
}

// Bitmap returns the underlying bitmap; callers must not modify it.
func (d *Deleted) Bitmap() *roaring64.Bitmap {
	if d == nil {
		return roaring64.New()
	}
	return d.bm
}

// GetFunc returns the whole object at path (relative to the table root). A
// storage.Storage's Get method has this signature.
type GetFunc func(ctx context.Context, path string) ([]byte, error)

// Load reads and verifies the deletion vector d names (invariant V1). get reads whole DV
// files; tableRoot is needed only for 'p' descriptors (invariant V2).
func Load(ctx context.Context, get GetFunc, tableRoot string, d Descriptor) (*Deleted, error) {
	return load(tableRoot, d, func(rel string) (*roaring64.Bitmap, error) {
		data, err := get(ctx, rel)
		if err != nil {
			return nil, err
		}
		return parseFileDV(data, d)
	})
}

// load resolves d and reads a file vector with fetch (given the relative path), or
// decodes an inline one; errors are *LoadError values naming the file and offset.
func load(tableRoot string, d Descriptor, fetch func(rel string) (*roaring64.Bitmap, error)) (*Deleted, error) {
	if d.StorageType == StorageInline {
		bm, err := loadInline(d)
		if err != nil {
			return nil, &LoadError{Path: "inline", Offset: d.Offset, Err: err}
		}
		return &Deleted{bm: bm}, nil
	}
	rel, err := d.RelativePath(tableRoot)
	if err != nil {
		return nil, &LoadError{Path: d.PathOrInlineDv, Offset: d.Offset, Err: err}
	}
	bm, err := fetch(rel)
	if err != nil {
		return nil, &LoadError{Path: rel, Offset: d.Offset, Err: err}
	}
	return &Deleted{bm: bm}, nil
}

func loadInline(d Descriptor) (*roaring64.Bitmap, error) {
	raw, err := DecodeZ85(d.PathOrInlineDv)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if d.SizeInBytes < 0 || int(d.SizeInBytes) > len(raw) || len(raw)-int(d.SizeInBytes) >= 4 {
		return nil, fmt.Errorf("%w: sizeInBytes %d does not match %d decoded bytes", ErrCorrupt, d.SizeInBytes, len(raw))
	}
	bm, err := ParseBitmap(raw[:d.SizeInBytes])
	if err != nil {
		return nil, err
	}
	return bm, checkCardinality(bm, d)
}

func checkCardinality(bm *roaring64.Bitmap, d Descriptor) error {
	if c := bm.GetCardinality(); c != uint64(d.Cardinality) || d.Cardinality < 0 {
		return fmt.Errorf("%w: bitmap holds %d rows, descriptor says %d", ErrCorrupt, c, d.Cardinality)
	}
	return nil
}

func parseFileDV(data []byte, d Descriptor) (*roaring64.Bitmap, error) {
	if len(data) < 1 {
		return nil, fmt.Errorf("%w: empty file", ErrCorrupt)
	}
	off := int64(d.Offset)
	if off < 1 || off+4 > int64(len(data)) {
		return nil, fmt.Errorf("%w: offset %d outside the %d-byte file", ErrCorrupt, off, len(data))
	}
	return parseFileRange(data[0], data[off:], int64(len(data))-off, d)
}

// parseFileRange verifies and decodes the DV at a descriptor's offset: version is the
// file's first byte, rng the bytes from the offset on (at least the DV's 4+size+4 bytes,
// possibly more), remaining the file length from the offset on (for messages).
func parseFileRange(version byte, rng []byte, remaining int64, d Descriptor) (*roaring64.Bitmap, error) {
	if version != FormatVersion {
		return nil, fmt.Errorf("%w: file starts with version byte %d, want %d", ErrCorrupt, version, FormatVersion)
	}
	if len(rng) < 4 {
		return nil, fmt.Errorf("%w: offset %d leaves %d bytes, too few for the size field", ErrCorrupt, d.Offset, remaining)
	}
	size := int64(int32(binary.BigEndian.Uint32(rng)))
	if size != int64(d.SizeInBytes) {
		return nil, fmt.Errorf("%w: stored size %d, descriptor says %d", ErrCorrupt, size, d.SizeInBytes)
	}
	if size < 0 || 4+size+4 > int64(len(rng)) {
		return nil, fmt.Errorf("%w: size %d runs past the end of the file (%d bytes from the offset)", ErrCorrupt, size, remaining)
	}
	body := rng[4 : 4+size]
	if want, got := binary.BigEndian.Uint32(rng[4+size:]), crc32.ChecksumIEEE(body); want != got {
		return nil, fmt.Errorf("%w: checksum %08x, stored %08x", ErrCorrupt, got, want)
	}
	bm, err := ParseBitmap(body)
	if err != nil {
		return nil, err
	}
	return bm, checkCardinality(bm, d)
}

// OpenFunc opens an object (path relative to the table root) for random access. A
// storage.Storage's Open method has this signature.
type OpenFunc func(ctx context.Context, path string) (storage.File, error)

// LoadRange is Load for stores with random access: it reads only the version byte and
// the descriptor's range of the DV file (4+sizeInBytes+4 bytes at the offset), not the
// whole file, which matters when one file holds the vectors of many data files (Spark
// packs up to 2 MiB of vectors per file). It verifies exactly what Load verifies
// (invariant V1) and returns the same errors.
func LoadRange(ctx context.Context, open OpenFunc, tableRoot string, d Descriptor) (*Deleted, error) {
	return load(tableRoot, d, func(rel string) (*roaring64.Bitmap, error) {
		f, err := open(ctx, rel)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readRange(f, d)
	})
}

func readRange(f storage.File, d Descriptor) (*roaring64.Bitmap, error) {
	fsize, off := f.Size(), int64(d.Offset)
	if fsize < 1 {
		return nil, fmt.Errorf("%w: empty file", ErrCorrupt)
	}
	if off < 1 || off+4 > fsize {
		return nil, fmt.Errorf("%w: offset %d outside the %d-byte file", ErrCorrupt, off, fsize)
	}
	if d.SizeInBytes < 0 || off+4+int64(d.SizeInBytes)+4 > fsize {
		return nil, fmt.Errorf("%w: descriptor size %d runs past the end of the %d-byte file", ErrCorrupt, d.SizeInBytes, fsize)
	}
	// One read from the version byte when the vector is the file's first, else two.
	start := off
	if off == 1 {
		start = 0
	}
	buf := make([]byte, off+4+int64(d.SizeInBytes)+4-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		return nil, fmt.Errorf("dv: read %d bytes at %d: %w", len(buf), start, err)
	}
	version := buf[0]
	if start != 0 {
		var v [1]byte
		if _, err := f.ReadAt(v[:], 0); err != nil {
			return nil, fmt.Errorf("dv: read version byte: %w", err)
		}
		version = v[0]
	}
	return parseFileRange(version, buf[off-start:], fsize-off, d)
}
