package stats

import (
	"reflect"
	"testing"
)

func TestSplitColumnList(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string
		err  bool
	}{
		{"entries split on commas outside backticks", " a , `b,c`.d ,e.f", []string{"a", "`b,c`.d", "e.f"}, false},
		{"blank value means no entries", "  ", nil, false},
		{"empty entry rejected", "a,,b", nil, true},
		{"unterminated quote rejected", "`a,b", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SplitColumnList(tc.in)
			if tc.err {
				if err == nil {
					t.Fatalf("SplitColumnList(%q) = %q, want an error", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseColumnPath(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  bool
	}{
		{"a", []string{"a"}, false},
		{"a.b.c", []string{"a", "b", "c"}, false},
		{"`a.b`.c", []string{"a.b", "c"}, false},
		{"`x``y`", []string{"x`y"}, false},
		{" a . b ", []string{"a", "b"}, false},
		{"`a b `", []string{"a b "}, false},
		{"a.", nil, true},
		{".a", nil, true},
		{"`a", nil, true},
		{"a`b`", nil, true},
		{"`a`b", nil, true},
		{"", nil, true},
	}
	for _, tc := range cases {
		got, err := ParseColumnPath(tc.in)
		if (err != nil) != tc.err || (!tc.err && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("ParseColumnPath(%q) = %q, %v; want %q (err %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestTruncateMax(t *testing.T) {
	const top = "\U0010FFFF"
	cases := []struct {
		name   string
		in     string
		prefix int
		want   string
		ok     bool
	}{
		{"short string unchanged", "abc", 3, "abc", true},
		{"ascii next char gets U+007F", "abcd", 3, "abc\x7f", true},
		{"next char U+007F itself gets U+10FFFF", "abc\x7fz", 3, "abc" + top, true},
		{"multi-byte next char gets U+10FFFF", "abcé", 3, "abc" + top, true},
		{"U+10FFFF run is skipped", "ab" + top + top + "c", 2, "ab" + top + top + "\x7f", true},
		{"run to the end returns the whole string", "ab" + top + top, 2, "ab" + top + top, true},
		{"run past 2x prefix has no bound", "ab" + top + top + top + "c", 2, "", false},
		{"invalid byte above F4 is skipped, not beaten", "ab\xffc", 2, "ab\xff\x7f", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := truncateMax(tc.in, tc.prefix)
			if got != tc.want || ok != tc.ok {
				t.Errorf("truncateMax(%q, %d) = %q, %v; want %q, %v", tc.in, tc.prefix, got, ok, tc.want, tc.ok)
			}
			if ok && got < tc.in {
				t.Errorf("bound %q is below the value %q", got, tc.in)
			}
		})
	}
}

// TestTruncationOfCutValuesAgrees checks the claim behind maxKeepBytes: cutting the
// running max to its leading bytes does not change truncateMax's answer.
func TestTruncationOfCutValuesAgrees(t *testing.T) {
	pieces := []string{"a", "\x7f", "é", "\U0010FFFF", "\xf4\x90", "\xff", "z", "日"}
	rng := newRand(1)
	for i := 0; i < 20000; i++ {
		var s string
		for n := rng.Intn(20); n > 0; n-- {
			s += pieces[rng.Intn(len(pieces))]
		}
		p := 1 + rng.Intn(4)
		w1, ok1 := truncateMax(s, p)
		w2, ok2 := truncateMax(cutBytes(s, maxKeepBytes(p)), p)
		if w1 != w2 || ok1 != ok2 {
			t.Fatalf("%q p=%d: full %q,%v cut %q,%v", s, p, w1, ok1, w2, ok2)
		}
		if m1, m2 := truncateMin(s, p), truncateMin(cutBytes(s, minKeepBytes(p)), p); m1 != m2 {
			t.Fatalf("%q p=%d: min %q vs %q", s, p, m1, m2)
		}
	}
}
