package repl

import (
	"reflect"
	"strings"
	"testing"

	"sluice/sql"
)

func TestSplitter(t *testing.T) {
	tests := []struct {
		name    string
		feeds   []string
		want    []Piece
		pending string
	}{
		{"two on one line", []string{"SELECT 1; SELECT 2;"}, []Piece{{"SELECT 1", 1}, {"SELECT 2", 1}}, ""},
		{"semicolon in a string", []string{"SELECT 'a;b';"}, []Piece{{"SELECT 'a;b'", 1}}, ""},
		{"doubled quote in a string", []string{"SELECT 'it''s;';"}, []Piece{{"SELECT 'it''s;'", 1}}, ""},
		{"quoted identifier", []string{`SELECT 1 AS "x;y";`}, []Piece{{`SELECT 1 AS "x;y"`, 1}}, ""},
		{"line comment", []string{"SELECT 1 -- not; the end\n;"}, []Piece{{"SELECT 1 -- not; the end", 1}}, ""},
		{"block comment", []string{"SELECT /* ; /* nested ; */ */ 1;"}, []Piece{{"SELECT /* ; /* nested ; */ */ 1", 1}}, ""},
		{"across feeds", []string{"SELECT\n", "1\n", ";\nSELECT 2"}, []Piece{{"SELECT\n1", 1}}, "SELECT 2"},
		{"start lines", []string{"\n\nSELECT 1;\n\nSELECT\n2;"}, []Piece{{"SELECT 1", 3}, {"SELECT\n2", 5}}, ""},
		{"only comments and empty statements", []string{"-- hello\n;;  ;"}, nil, ""},
		{"unterminated string stays pending", []string{"SELECT 'abc;\n"}, nil, "SELECT 'abc;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp := NewSplitter()
			var got []Piece
			for _, f := range tt.feeds {
				ps, err := sp.Feed(f)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ps...)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("pieces = %+v, want %+v", got, tt.want)
			}
			p, ok := sp.Pending()
			if ok != (tt.pending != "") || p.SQL != tt.pending {
				t.Errorf("pending = %q (%v), want %q", p.SQL, ok, tt.pending)
			}
		})
	}
}

// TestSplitterChunks feeds scripts one byte at a time: two-byte tokens
// (--, /*, */) split across feeds must scan as when fed whole.
func TestSplitterChunks(t *testing.T) {
	for _, text := range []string{
		"SELECT 1 -- not; the end\n;SELECT /* ; /* nested ; */ */ 2;",
		"SELECT 10-2; SELECT 6/3; SELECT 2*3 -- c\n; SELECT 'a-;/*';",
		"SELECT 1 -",
	} {
		whole := NewSplitter()
		want, err := whole.Feed(text)
		if err != nil {
			t.Fatal(err)
		}
		wp, _ := whole.Pending()
		sp := NewSplitter()
		var got []Piece
		for i := 0; i < len(text); i++ {
			ps, err := sp.Feed(text[i : i+1])
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ps...)
		}
		gp, _ := sp.Pending()
		if !reflect.DeepEqual(got, want) || gp != wp {
			t.Errorf("%q byte by byte: %+v pending %q, whole: %+v pending %q", text, got, gp.SQL, want, wp.SQL)
		}
	}
}

// TestSplitterRefusesNUL checks that a NUL byte is an error naming its
// position, never a silent end of the statement.
func TestSplitterRefusesNUL(t *testing.T) {
	sp := NewSplitter()
	pieces, err := sp.Feed("SELECT 1;\nSELECT count(*) FROM lineitem\x00 WHERE l_orderkey = 1;\n")
	if len(pieces) != 1 || pieces[0].SQL != "SELECT 1" {
		t.Errorf("pieces before the NUL = %+v, want SELECT 1", pieces)
	}
	if err == nil || err.Error() != "NUL byte at line 2 column 30" {
		t.Errorf("got %v, want NUL byte at line 2 column 30", err)
	}
}

// TestSplitterStatementLimit checks the statement size limit: a statement
// at the limit splits, one byte more is an error.
func TestSplitterStatementLimit(t *testing.T) {
	ok := "SELECT '" + strings.Repeat("x", sql.MaxStatementBytes-9) + "'"
	sp := NewSplitter()
	pieces, err := sp.Feed(ok + ";")
	if err != nil || len(pieces) != 1 {
		t.Fatalf("a statement of %d bytes: %v", len(ok), err)
	}
	sp = NewSplitter()
	_, err = sp.Feed("\n" + ok + "x;")
	if err == nil || !strings.Contains(err.Error(), "statement starting at line 2 is too large") {
		t.Errorf("a statement over the limit: got %v", err)
	}
}
