package repl

import (
	"reflect"
	"testing"
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
				got = append(got, sp.Feed(f)...)
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
