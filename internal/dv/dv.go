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

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/google/uuid"
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

// ParseBitmap decodes magic number + portable 64-bit RoaringBitmap bytes (an inline DV, or
// the bitmapData of a DV in a file). All bytes must be consumed.
func ParseBitmap(data []byte) (*roaring64.Bitmap, error) {
	if len(data) < 4 {
		return nil, fmt.Errorf("%w: %d bytes, too short for the magic number", ErrCorrupt, len(data))
	}
	if m := binary.LittleEndian.Uint32(data); m != Magic {
		return nil, fmt.Errorf("%w: magic number %d, want %d", ErrCorrupt, m, Magic)
	}
	bm := roaring64.New()
	rd := bytes.NewReader(data[4:])
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

// Load reads and verifies the deletion vector d names (invariant V1). get reads DV files;
// tableRoot is needed only for 'p' descriptors (invariant V2).
func Load(ctx context.Context, get GetFunc, tableRoot string, d Descriptor) (*Deleted, error) {
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
	data, err := get(ctx, rel)
	if err != nil {
		return nil, &LoadError{Path: rel, Offset: d.Offset, Err: err}
	}
	bm, err := parseFileDV(data, d)
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
	if len(data) < 1 || data[0] != FormatVersion {
		return nil, fmt.Errorf("%w: file does not start with version byte %d", ErrCorrupt, FormatVersion)
	}
	off := int64(d.Offset)
	if off < 1 || off+4 > int64(len(data)) {
		return nil, fmt.Errorf("%w: offset %d outside the %d-byte file", ErrCorrupt, off, len(data))
	}
	size := int64(int32(binary.BigEndian.Uint32(data[off:])))
	if size != int64(d.SizeInBytes) {
		return nil, fmt.Errorf("%w: stored size %d, descriptor says %d", ErrCorrupt, size, d.SizeInBytes)
	}
	end := off + 4 + size
	if size < 0 || end+4 > int64(len(data)) {
		return nil, fmt.Errorf("%w: size %d runs past the end of the %d-byte file", ErrCorrupt, size, len(data))
	}
	body := data[off+4 : end]
	if want, got := binary.BigEndian.Uint32(data[end:]), crc32.ChecksumIEEE(body); want != got {
		return nil, fmt.Errorf("%w: checksum %08x, stored %08x", ErrCorrupt, got, want)
	}
	bm, err := ParseBitmap(body)
	if err != nil {
		return nil, err
	}
	return bm, checkCardinality(bm, d)
}

// SerializeBitmap returns the magic number followed by bm in the portable format (the
// bitmapData of a DV). bm is run-optimized in place.
func SerializeBitmap(bm *roaring64.Bitmap) ([]byte, error) {
	if !bm.IsEmpty() && bm.Maximum()>>63 != 0 {
		return nil, fmt.Errorf("%w: row position %d has the top bit set", ErrInvalidDescriptor, bm.Maximum())
	}
	bm.RunOptimize()
	var buf bytes.Buffer
	var magic [4]byte
	binary.LittleEndian.PutUint32(magic[:], Magic)
	buf.Write(magic[:])
	if _, err := bm.WritePortableTo(&buf); err != nil {
		return nil, fmt.Errorf("dv: serialize bitmap: %w", err)
	}
	return buf.Bytes(), nil
}

// EncodeFile writes bm as the only DV of a new DV file named by id under prefix (a
// relative directory, "" for the table root). It returns the file bytes and the 'u'
// descriptor naming it; the file goes to d.RelativePath("").
func EncodeFile(bm *roaring64.Bitmap, id uuid.UUID, prefix string) (file []byte, d Descriptor, err error) {
	body, err := SerializeBitmap(bm)
	if err != nil {
		return nil, Descriptor{}, err
	}
	out := make([]byte, 0, 1+4+len(body)+4)
	out = append(out, FormatVersion)
	out = binary.BigEndian.AppendUint32(out, uint32(len(body)))
	out = append(out, body...)
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(body))
	d = Descriptor{
		StorageType:    StorageUUID,
		PathOrInlineDv: prefix + EncodeZ85(id[:]),
		Offset:         1,
		SizeInBytes:    int32(len(body)),
		Cardinality:    int64(bm.GetCardinality()),
	}
	if _, err := d.RelativePath(""); err != nil {
		return nil, Descriptor{}, err
	}
	return out, d, nil
}

// EncodeInline returns an inline ('i') descriptor holding bm.
func EncodeInline(bm *roaring64.Bitmap) (Descriptor, error) {
	body, err := SerializeBitmap(bm)
	if err != nil {
		return Descriptor{}, err
	}
	return Descriptor{
		StorageType:    StorageInline,
		PathOrInlineDv: EncodeZ85(body),
		SizeInBytes:    int32(len(body)),
		Cardinality:    int64(bm.GetCardinality()),
	}, nil
}
