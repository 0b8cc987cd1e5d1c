package pqguard

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// CheckArrowSchema refuses an ARROW:schema footer entry whose IPC message claims more
// than it holds. arrow-go allocates what a length in the message says before it reads
// what the length covers, so a damaged length is an allocation of gigabytes: a fatal
// out-of-memory that no recover contains. The entry is base64 of an IPC stream whose
// first message is the schema: [0xFFFFFFFF] int32 metadata length, then a flatbuffer
// Message (Message.fbs/Schema.fbs) and its body. Checked: the metadata length, the
// body length, and every vector arrow-go sizes a slice from (Schema.fields,
// Field.children, the custom_metadata of both) against the bytes that hold it.
func CheckArrowSchema(kv metadata.KeyValueMetadata) error {
	v := kv.FindValue("ARROW:schema")
	if v == nil {
		return nil
	}
	var raw []byte
	var err error
	if len(*v)%4 == 0 { // decoded as pqarrow does: padded, else unpadded
		raw, err = base64.StdEncoding.DecodeString(*v)
	}
	if len(raw) == 0 || err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(*v); err != nil {
			return fmt.Errorf("footer: ARROW:schema is not base64: %w", err)
		}
	}
	if err := checkSchemaMessage(raw); err != nil {
		return fmt.Errorf("footer: ARROW:schema of %d bytes: %w", len(raw), err)
	}
	return nil
}

// checkSchemaMessage checks the lengths of an IPC schema message (see CheckArrowSchema).
func checkSchemaMessage(raw []byte) error {
	at := int64(0)
	n, err := fbuf(raw).u32(at)
	if err == nil && n == 0xFFFFFFFF {
		at += 4
		n, err = fbuf(raw).u32(at)
	}
	if err != nil {
		return errors.New("no message length")
	}
	at += 4
	if int32(n) < 4 || int64(n) > int64(len(raw))-at {
		return fmt.Errorf("message length %d, %d bytes follow", int32(n), int64(len(raw))-at)
	}
	b := fbuf(raw[at : at+int64(n)])
	rest := int64(len(raw)) - at - int64(n)
	root, err := b.u32(0)
	if err != nil {
		return err
	}
	// Message: version 0, header_type 1, header 2, bodyLength 3, custom_metadata 4.
	if f, ok, err := b.field(int64(root), 3); err != nil {
		return err
	} else if ok {
		body, err := b.u64(f)
		if err != nil {
			return err
		}
		if int64(body) < 0 || int64(body) > rest {
			return fmt.Errorf("message body of %d bytes, %d follow", int64(body), rest)
		}
	}
	if _, _, err := b.vector(int64(root), 4, 4); err != nil {
		return err
	}
	schema, ok, err := b.ref(int64(root), 2)
	if err != nil || !ok {
		return err
	}
	// Schema: endianness 0, fields 1, custom_metadata 2, features 3.
	if _, _, err := b.vector(schema, 2, 4); err != nil {
		return err
	}
	budget := len(b) // fields visited: a field shared by many parents is not a tree
	return b.fields(schema, 1, 0, &budget)
}

// fbuf reads a flatbuffer, every access bounds-checked.
type fbuf []byte

func (b fbuf) u32(at int64) (uint32, error) {
	if at < 0 || at > int64(len(b))-4 {
		return 0, fmt.Errorf("offset %d outside the message", at)
	}
	return binary.LittleEndian.Uint32(b[at:]), nil
}

func (b fbuf) u64(at int64) (uint64, error) {
	if at < 0 || at > int64(len(b))-8 {
		return 0, fmt.Errorf("offset %d outside the message", at)
	}
	return binary.LittleEndian.Uint64(b[at:]), nil
}

// field returns where field slot of the table at tab is stored (ok false: absent).
func (b fbuf) field(tab int64, slot int) (at int64, ok bool, err error) {
	soff, err := b.u32(tab)
	if err != nil {
		return 0, false, err
	}
	vt := tab - int64(int32(soff))
	if vt < 0 || vt > int64(len(b))-4 {
		return 0, false, fmt.Errorf("vtable at %d outside the message", vt)
	}
	vtSize := int64(binary.LittleEndian.Uint16(b[vt:]))
	s := int64(4 + 2*slot)
	if s >= vtSize { // as flatbuffers decides presence (an odd size counts)
		return 0, false, nil
	}
	if vt+s+2 > int64(len(b)) {
		return 0, false, fmt.Errorf("vtable at %d outside the message", vt)
	}
	off := int64(binary.LittleEndian.Uint16(b[vt+s:]))
	if off == 0 {
		return 0, false, nil
	}
	return tab + off, true, nil
}

// ref follows the offset stored in field slot of the table at tab.
func (b fbuf) ref(tab int64, slot int) (at int64, ok bool, err error) {
	f, ok, err := b.field(tab, slot)
	if err != nil || !ok {
		return 0, false, err
	}
	off, err := b.u32(f)
	if err != nil {
		return 0, false, err
	}
	return f + int64(off), true, nil
}

// vector returns the first element and length of the vector in field slot of the
// table at tab, checked to fit in the message with elements of size bytes.
func (b fbuf) vector(tab int64, slot int, size int64) (start, n int64, err error) {
	at, ok, err := b.ref(tab, slot)
	if err != nil || !ok {
		return 0, 0, err
	}
	l, err := b.u32(at)
	if err != nil {
		return 0, 0, err
	}
	start, n = at+4, int64(l)
	if n > (int64(len(b))-start)/size {
		return 0, 0, fmt.Errorf("vector of %d elements at %d does not fit in the message", n, at)
	}
	return start, n, nil
}

// fields checks the vector of Field tables in field slot of the table at tab, and
// their children. Field: name 0, nullable 1, type_type 2, type 3, dictionary 4,
// children 5, custom_metadata 6.
func (b fbuf) fields(tab int64, slot, depth int, budget *int) error {
	start, n, err := b.vector(tab, slot, 4)
	if err != nil {
		return err
	}
	if depth > 64 {
		return errors.New("fields nested more than 64 deep")
	}
	for i := range n {
		if *budget--; *budget < 0 {
			return errors.New("more fields than the message has bytes")
		}
		off, err := b.u32(start + 4*i)
		if err != nil {
			return err
		}
		f := start + 4*i + int64(off)
		if _, _, err := b.vector(f, 6, 4); err != nil {
			return err
		}
		if err := b.fields(f, 5, depth+1, budget); err != nil {
			return err
		}
	}
	return nil
}
