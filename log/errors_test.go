package log

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestConflictErrorMessage(t *testing.T) {
	e := &ConflictError{Kind: ErrConcurrentDeleteRead, Version: 12, Files: []string{"a", "b", "c", "d", "e", "f", "g"}}
	msg := e.Error()
	for _, want := range []string{"log: concurrent delete of a file read", "commit 12", "a, b, c, d, e", "and 2 more"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if !errors.Is(e, ErrConcurrentDeleteRead) || errors.Is(e, ErrConcurrentAppend) {
		t.Error("Unwrap must expose exactly the kind")
	}
	if msg := (&ConflictError{Kind: ErrMetadataChanged, Version: 3}).Error(); strings.Contains(msg, "(") {
		t.Errorf("no files, no list: %q", msg)
	}
}

func TestUnsupportedFeatureErrorMessage(t *testing.T) {
	r := (&UnsupportedFeatureError{Features: []string{"x", "y"}, Reader: true}).Error()
	w := (&UnsupportedFeatureError{Features: []string{"z"}}).Error()
	if r != "log: unsupported reader features: x, y" || w != "log: unsupported writer features: z" {
		t.Errorf("%q / %q", r, w)
	}
}

func TestRemoveHelpers(t *testing.T) {
	v := "1"
	r := &Remove{Path: "p=1/a%2Bb.parquet", PartitionValues: map[string]*string{"p": &v, "q": nil}}
	if p, err := r.DecodedPath(); err != nil || p != "p=1/a+b.parquet" {
		t.Errorf("decoded %q %v", p, err)
	}
	if got, isNull := r.PartitionValue("p"); isNull || got != "1" {
		t.Errorf("p = %q null=%v", got, isNull)
	}
	if _, isNull := r.PartitionValue("q"); !isNull {
		t.Error("q must be null")
	}
}

func TestNonFiniteStatsRenderAsStrings(t *testing.T) {
	cases := map[float64]any{math.NaN(): "NaN", math.Inf(1): "Infinity", math.Inf(-1): "-Infinity", 1.5: 1.5}
	for in, want := range cases {
		if got := floatAny(in); got != want {
			t.Errorf("%v: got %v want %v", in, got, want)
		}
	}
}
