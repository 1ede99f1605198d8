package repl

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzSplitter feeds arbitrary text to the statement splitter whole and cut
// in two at an arbitrary byte: it must never panic, the two ways must give
// the same statements, the same pending text and the same verdict, and
// every statement must be text from the input that starts on a line the
// input has.
func FuzzSplitter(f *testing.F) {
	for _, s := range []string{
		"", ";", "SELECT 1; SELECT 2;", "SELECT 'a;b';", "SELECT 'it''s;';", `SELECT 1 AS "x;y";`,
		"SELECT 1 -- c; d\n;", "SELECT /* ; /* nested ; */ */ 1;", "SELECT\n1\n;\nSELECT 2",
		"-- only\n;;  ;", "SELECT 'abc;\n", "SELECT 10-2; SELECT 6/3; SELECT 2*3 -- c\n; SELECT 'a-;/*';",
		"SELECT 1 -", "SELECT 1 /", "SELECT 1 *", "/* unterminated ;", "\"unterminated ; ident",
		"SELECT 'é;ü' ; SELECT '日本';", "SELECT 1\x00;", "SELECT $$a;b$$;",
	} {
		f.Add(s, uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, text string, cut uint16) {
		whole := NewSplitter()
		want, wantErr := whole.Feed(text)
		wantPending, wantOK := whole.Pending()

		at := int(cut) % (len(text) + 1)
		parts := NewSplitter()
		got, err := parts.Feed(text[:at])
		if err == nil {
			var more []Piece
			more, err = parts.Feed(text[at:])
			got = append(got, more...)
		}
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q cut at %d: error %v, fed whole %v", text, at, err, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q cut at %d: %+v, fed whole %+v", text, at, got, want)
		}
		if wantErr != nil {
			return
		}
		if p, ok := parts.Pending(); ok != wantOK || p != wantPending {
			t.Fatalf("%q cut at %d: pending %+v (%v), fed whole %+v (%v)", text, at, p, ok, wantPending, wantOK)
		}
		lines := 1 + strings.Count(text, "\n")
		for _, p := range want {
			if p.SQL == "" || !strings.Contains(text, p.SQL) {
				t.Fatalf("%q: statement %q is not a piece of the input", text, p.SQL)
			}
			if p.Line < 1 || p.Line > lines {
				t.Fatalf("%q: statement %q starts on line %d of %d", text, p.SQL, p.Line, lines)
			}
		}
	})
}
