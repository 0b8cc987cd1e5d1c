package dv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net/url"
	"path"
	"strings"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/google/uuid"

	"github.com/skiplake/skiplake/log"
)

// SerializeBitmap returns the bitmapData of a deletion vector: the magic number (little
// endian) followed by bm in the portable 64-bit RoaringBitmap format. bm is
// run-optimized in place first (its set of rows is unchanged), so that a vector gets the
// same containers, and therefore the same bytes, as Spark gives it (checked against
// every Spark-written vector of the golden tables).
//
// The one known byte difference from Spark: Delta's RoaringBitmapArray also writes the
// empty 32-bit buckets below its highest one, while the roaring library writes only
// non-empty buckets. Both are the portable format of the RoaringBitmap specification and
// both readers accept both (Delta's fills the gaps); they differ only for vectors with
// row positions of 2^32 and above, i.e. data files of more than four billion rows.
//
// Row positions with the top bit set are refused with ErrInvalidRows: PROTOCOL.md
// ("Deletion Vector Format") defines the bitmap, and Delta's own RoaringBitmapArray
// holds row positions as non-negative 64-bit integers.
func SerializeBitmap(bm *roaring64.Bitmap) ([]byte, error) {
	if bm == nil {
		return nil, fmt.Errorf("%w: nil bitmap", ErrInvalidRows)
	}
	if !bm.IsEmpty() && bm.Maximum()>>63 != 0 {
		return nil, fmt.Errorf("%w: row position %d has the top bit set", ErrInvalidRows, bm.Maximum())
	}
	bm.RunOptimize()
	var buf bytes.Buffer
	buf.Grow(4 + int(bm.GetSerializedSizeInBytes()))
	var magic [4]byte
	binary.LittleEndian.PutUint32(magic[:], Magic)
	buf.Write(magic[:])
	if _, err := bm.WritePortableTo(&buf); err != nil {
		return nil, fmt.Errorf("dv: serialize bitmap: %w", err)
	}
	return buf.Bytes(), nil
}

// maxVectorSize is the largest bitmapData a descriptor can describe (sizeInBytes and
// offset are 32-bit signed integers in the log).
const maxVectorSize = 1<<31 - 1

// FileWriter writes one deletion-vector file (PROTOCOL.md "Deletion Vector File Storage
// Format"): the version byte, then each added vector at the next offset as
//
//	| dataSize int32 BE | bitmapData (magic + portable bitmap) | CRC-32 (IEEE) BE of bitmapData |
//
// Add returns the 'u' descriptor of each vector: the file's prefix and Z85-encoded UUID,
// the vector's offset (1 for the first), its dataSize as sizeInBytes and its
// cardinality. The file is named deletion_vector_<uuid>.bin under the prefix directory
// (see Descriptor.RelativePath); Path returns that name.
//
// A FileWriter does not buffer: each Add writes its vector to w with one Write. The first
// error is sticky. A FileWriter is not safe for concurrent use.
type FileWriter struct {
	w      io.Writer
	id     uuid.UUID
	prefix string
	rel    string
	off    int64
	n      int
	err    error
}

// NewFileWriter starts a DV file named by id under prefix (a relative directory, "" for
// the table root) on w, writing the version byte. The prefix must be a clean relative
// path (no leading '/', no "..", no '\').
func NewFileWriter(w io.Writer, id uuid.UUID, prefix string) (*FileWriter, error) {
	probe := Descriptor{StorageType: StorageUUID, PathOrInlineDv: prefix + EncodeZ85(id[:])}
	rel, err := probe.RelativePath("")
	if err != nil {
		return nil, err
	}
	fw := &FileWriter{w: w, id: id, prefix: prefix, rel: rel}
	if _, err := w.Write([]byte{FormatVersion}); err != nil {
		fw.err = fmt.Errorf("dv: write %s: %w", rel, err)
		return nil, fw.err
	}
	fw.off = 1
	return fw, nil
}

// Add serializes bm (see SerializeBitmap; bm is run-optimized in place), appends it to
// the file and returns its descriptor. An empty bitmap is refused with ErrEmptyVector:
// a file without deleted rows carries no deletion vector.
func (fw *FileWriter) Add(bm *roaring64.Bitmap) (Descriptor, error) {
	if bm != nil && bm.IsEmpty() {
		return Descriptor{}, fmt.Errorf("%w (file %s, vector %d)", ErrEmptyVector, fw.rel, fw.n)
	}
	body, err := SerializeBitmap(bm)
	if err != nil {
		return Descriptor{}, err
	}
	return fw.addSerialized(body, int64(bm.GetCardinality()))
}

// addSerialized appends already serialized bitmapData with the given cardinality.
func (fw *FileWriter) addSerialized(body []byte, cardinality int64) (Descriptor, error) {
	if fw.err != nil {
		return Descriptor{}, fw.err
	}
	if len(body) > maxVectorSize || fw.off > maxVectorSize {
		return Descriptor{}, fmt.Errorf("%w: a %d-byte vector at offset %d does not fit the 32-bit size and offset fields",
			ErrInvalidRows, len(body), fw.off)
	}
	rec := make([]byte, 0, 4+len(body)+4)
	rec = binary.BigEndian.AppendUint32(rec, uint32(len(body)))
	rec = append(rec, body...)
	rec = binary.BigEndian.AppendUint32(rec, crc32.ChecksumIEEE(body))
	if _, err := fw.w.Write(rec); err != nil {
		fw.err = fmt.Errorf("dv: write %s: %w", fw.rel, err)
		return Descriptor{}, fw.err
	}
	d := Descriptor{
		StorageType:    StorageUUID,
		PathOrInlineDv: fw.prefix + EncodeZ85(fw.id[:]),
		Offset:         int32(fw.off),
		SizeInBytes:    int32(len(body)),
		Cardinality:    cardinality,
	}
	fw.off += int64(len(rec))
	fw.n++
	return d, nil
}

// Size is the number of bytes written so far (the version byte included).
func (fw *FileWriter) Size() int64 { return fw.off }

// Len is the number of vectors written.
func (fw *FileWriter) Len() int { return fw.n }

// Path is the file's path relative to the table root: [prefix/]deletion_vector_<uuid>.bin.
func (fw *FileWriter) Path() string { return fw.rel }

// EncodeFile writes bm as the only DV of a new DV file named by id under prefix (a
// relative directory, "" for the table root). It returns the file bytes and the 'u'
// descriptor naming it; the file goes to d.RelativePath(""). bm is run-optimized in place.
func EncodeFile(bm *roaring64.Bitmap, id uuid.UUID, prefix string) (file []byte, d Descriptor, err error) {
	var buf bytes.Buffer
	fw, err := NewFileWriter(&buf, id, prefix)
	if err != nil {
		return nil, Descriptor{}, err
	}
	if d, err = fw.Add(bm); err != nil {
		return nil, Descriptor{}, err
	}
	return buf.Bytes(), d, nil
}

// EncodeInline returns an inline ('i') descriptor holding bm: its bitmapData, Z85-encoded
// (padded with zero bytes to a multiple of 4; sizeInBytes keeps the true length). bm is
// run-optimized in place. An empty bitmap is refused with ErrEmptyVector.
func EncodeInline(bm *roaring64.Bitmap) (Descriptor, error) {
	if bm != nil && bm.IsEmpty() {
		return Descriptor{}, fmt.Errorf("%w (inline)", ErrEmptyVector)
	}
	body, err := SerializeBitmap(bm)
	if err != nil {
		return Descriptor{}, err
	}
	return inlineDescriptor(body, int64(bm.GetCardinality())), nil
}

func inlineDescriptor(body []byte, cardinality int64) Descriptor {
	return Descriptor{
		StorageType:    StorageInline,
		PathOrInlineDv: EncodeZ85(body),
		SizeInBytes:    int32(len(body)),
		Cardinality:    cardinality,
	}
}

// Union returns the rows deleted by old (nil: the file has no deletion vector yet) plus
// the rows in add, and how many of add's rows were not deleted already. Neither input is
// modified. numRecords is the data file's physical row count (stats numRecords): a row
// position at or beyond it is refused with ErrInvalidRows, since it names no row.
//
// The result always contains every row of old (invariant D1: a deletion vector only
// grows); a DML command writes it as the file's new vector, never add alone.
func Union(old *Deleted, add *roaring64.Bitmap, numRecords int64) (merged *roaring64.Bitmap, newlyDeleted uint64, err error) {
	if err := old.CheckRows(numRecords); err != nil {
		return nil, 0, fmt.Errorf("existing vector: %w", err)
	}
	if err := NewDeleted(add).CheckRows(numRecords); err != nil {
		return nil, 0, err
	}
	if numRecords < 0 {
		return nil, 0, fmt.Errorf("%w: negative row count %d", ErrInvalidRows, numRecords)
	}
	merged = roaring64.New()
	if old != nil {
		merged.Or(old.bm)
	}
	if add != nil && !add.IsEmpty() {
		before := merged.GetCardinality()
		merged.Or(add)
		newlyDeleted = merged.GetCardinality() - before
	}
	return merged, newlyDeleted, nil
}

// NewDeleted wraps a bitmap as a *Deleted (for tests and for vectors just built); bm must
// not be modified afterwards.
func NewDeleted(bm *roaring64.Bitmap) *Deleted {
	if bm == nil {
		return nil
	}
	return &Deleted{bm: bm}
}

// ToLog returns the descriptor as the log's deletionVector object: offset present for
// file vectors ('u', 'p'), absent for inline ones, no maxRowIndex (Spark writes none).
func (d Descriptor) ToLog() *log.DeletionVectorDescriptor {
	out := &log.DeletionVectorDescriptor{StorageType: d.StorageType, PathOrInlineDv: d.PathOrInlineDv,
		SizeInBytes: d.SizeInBytes, Cardinality: d.Cardinality}
	if d.StorageType != StorageInline {
		off := d.Offset
		out.Offset = &off
	}
	return out
}

// FromLog converts the log's deletionVector object (an absent offset reads as 0, as
// PROTOCOL.md "Deletion Vector Descriptor Schema" says). A nil descriptor gives the zero Descriptor.
func FromLog(d *log.DeletionVectorDescriptor) Descriptor {
	if d == nil {
		return Descriptor{}
	}
	out := Descriptor{StorageType: d.StorageType, PathOrInlineDv: d.PathOrInlineDv,
		SizeInBytes: d.SizeInBytes, Cardinality: d.Cardinality}
	if d.Offset != nil {
		out.Offset = *d.Offset
	}
	return out
}

// UUIDDescriptor builds the 'u' descriptor of a vector stored at offset in the file
// [prefix/]deletion_vector_<id>.bin relative to the table root. The prefix is validated
// as Descriptor.RelativePath validates it.
func UUIDDescriptor(id uuid.UUID, prefix string, offset, sizeInBytes int32, cardinality int64) (Descriptor, error) {
	d := Descriptor{StorageType: StorageUUID, PathOrInlineDv: prefix + EncodeZ85(id[:]),
		Offset: offset, SizeInBytes: sizeInBytes, Cardinality: cardinality}
	if _, err := d.RelativePath(""); err != nil {
		return Descriptor{}, err
	}
	if offset < 1 || sizeInBytes < 4 || cardinality < 1 {
		return Descriptor{}, fmt.Errorf("%w: offset %d, sizeInBytes %d, cardinality %d", ErrInvalidDescriptor, offset, sizeInBytes, cardinality)
	}
	return d, nil
}

// Absolute returns the 'p' descriptor naming the same vector as the 'u' descriptor d by an
// absolute URI under tableRoot (a URI such as s3://bucket/t or file:///data/t, or an
// absolute local path, which becomes a file: URI). Path elements are percent-encoded as
// in the log's path fields. The result resolves back to the same relative path under
// tableRoot (RelativePath, invariant V2).
func (d Descriptor) Absolute(tableRoot string) (Descriptor, error) {
	if d.StorageType != StorageUUID {
		return Descriptor{}, fmt.Errorf("%w: only 'u' descriptors convert to absolute paths, not %q", ErrInvalidDescriptor, d.StorageType)
	}
	rel, err := d.RelativePath("")
	if err != nil {
		return Descriptor{}, err
	}
	u, err := url.Parse(tableRoot)
	if err != nil || tableRoot == "" {
		return Descriptor{}, fmt.Errorf("%w: table root %q is not a URI or path", ErrInvalidDescriptor, tableRoot)
	}
	if u.Scheme == "" {
		if !strings.HasPrefix(tableRoot, "/") {
			return Descriptor{}, fmt.Errorf("%w: table root %q is relative", ErrInvalidDescriptor, tableRoot)
		}
		u = &url.URL{Scheme: "file", Path: tableRoot}
	}
	abs := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: path.Join("/", u.Path, rel)}
	d.StorageType, d.PathOrInlineDv = StorageAbsolute, abs.String()
	return d, nil
}
