package stats

import (
	"errors"
	"reflect"
	"testing"
)

func TestConfigFromProperties(t *testing.T) {
	cases := []struct {
		name  string
		props map[string]string
		want  Config
		err   bool
	}{
		{"absent properties give the zero (default) config", nil, Config{}, false},
		{"-1 means all columns", map[string]string{PropNumIndexedCols: "-1"}, Config{NumIndexedCols: IndexAllColumns}, false},
		{"0 means no columns", map[string]string{PropNumIndexedCols: "0"}, Config{NumIndexedCols: IndexNoColumns}, false},
		{"keys match case-insensitively", map[string]string{"DELTA.DATASKIPPINGNUMINDEXEDCOLS": " 5 "}, Config{NumIndexedCols: 5}, false},
		{"below -1 is rejected", map[string]string{PropNumIndexedCols: "-2"}, Config{}, true},
		{"non-integer is rejected", map[string]string{PropNumIndexedCols: "many"}, Config{}, true},
		{"prefix length read", map[string]string{PropStringPrefixLength: "8"}, Config{StringPrefixLength: 8}, false},
		{"prefix length 0 rejected", map[string]string{PropStringPrefixLength: "0"}, Config{}, true},
		{"stats columns split on commas outside backticks", map[string]string{PropStatsColumns: " a , `b,c`.d ,e.f"},
			Config{StatsColumns: []string{"a", "`b,c`.d", "e.f"}}, false},
		{"blank stats columns means unset", map[string]string{PropStatsColumns: "  "}, Config{}, false},
		{"empty entry rejected", map[string]string{PropStatsColumns: "a,,b"}, Config{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConfigFromProperties(tc.props)
			if tc.err {
				if !errors.Is(err, ErrInvalidConfig) {
					t.Fatalf("err = %v, want ErrInvalidConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
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
