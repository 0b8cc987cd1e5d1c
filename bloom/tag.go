package bloom

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

const (
	// TagKey is the add.tags key under which a data file names its Bloom index.
	TagKey = "skiplake.bloom"
	// IndexDir is the directory, relative to the table root, that holds Bloom index
	// files: IndexDir + "<uuid>.bin". VACUUM treats it like data: an index file is
	// garbage once no live add action's tag names it.
	IndexDir = "_delta_index/bloom/"
)

// Tag is the value stored under TagKey in a data file's add.tags. Its JSON form is
//
//	{"v":1,"path":"_delta_index/bloom/<uuid>.bin","cols":["id","email"]}
//
// The file is covered for exactly the listed columns, and only if the named index
// file also holds an entry for (add.path, column) (invariant B1).
type Tag struct {
	// Version is the index format version (FormatVersion); 0 means FormatVersion
	// when encoding.
	Version int `json:"v"`
	// Path is the index file path relative to the table root, under IndexDir.
	Path string `json:"path"`
	// Columns lists the indexed columns (non-empty, no duplicates).
	Columns []string `json:"cols"`
}

// HasColumn reports whether the tag lists column.
func (t Tag) HasColumn(column string) bool {
	for _, c := range t.Columns {
		if c == column {
			return true
		}
	}
	return false
}

// NewIndexPath returns a fresh index file path: IndexDir + "<random uuid>.bin".
func NewIndexPath() string { return IndexDir + uuid.NewString() + ".bin" }

// EncodeTag validates t and renders its JSON form for add.tags.
func EncodeTag(t Tag) (string, error) {
	if t.Version == 0 {
		t.Version = FormatVersion
	}
	if err := t.validate(); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(t); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadTag, err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// DecodeTag parses a TagKey value. A tag of another format version fails with an
// error wrapping ErrUnsupportedVersion, anything else malformed with ErrBadTag; in
// both cases the caller treats the file as not covered.
func DecodeTag(s string) (Tag, error) {
	var t Tag
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&t); err != nil {
		return Tag{}, fmt.Errorf("%w: %q: %v", ErrBadTag, s, err)
	}
	if dec.More() {
		return Tag{}, fmt.Errorf("%w: %q: trailing data", ErrBadTag, s)
	}
	if err := t.validate(); err != nil {
		return Tag{}, err
	}
	return t, nil
}

func (t Tag) validate() error {
	if t.Version != FormatVersion {
		return fmt.Errorf("%w: tag version %d (this reader knows %d)", ErrUnsupportedVersion, t.Version, FormatVersion)
	}
	if err := validIndexPath(t.Path); err != nil {
		return err
	}
	if len(t.Columns) == 0 {
		return fmt.Errorf("%w: no columns", ErrBadTag)
	}
	seen := make(map[string]struct{}, len(t.Columns))
	for _, c := range t.Columns {
		if c == "" {
			return fmt.Errorf("%w: empty column name", ErrBadTag)
		}
		if _, dup := seen[c]; dup {
			return fmt.Errorf("%w: duplicate column %q", ErrBadTag, c)
		}
		seen[c] = struct{}{}
	}
	return nil
}

// validIndexPath accepts only clean relative paths under IndexDir.
func validIndexPath(p string) error {
	rest, ok := strings.CutPrefix(p, IndexDir)
	if !ok || rest == "" {
		return fmt.Errorf("%w: index path %q not under %s", ErrBadTag, p, IndexDir)
	}
	if strings.ContainsAny(p, "\\\x00") {
		return fmt.Errorf("%w: index path %q has a backslash or NUL", ErrBadTag, p)
	}
	for _, el := range strings.Split(rest, "/") {
		if el == "" || el == "." || el == ".." {
			return fmt.Errorf("%w: index path %q is not clean", ErrBadTag, p)
		}
	}
	return nil
}
