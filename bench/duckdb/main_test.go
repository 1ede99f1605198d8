//go:build duckdb_arrow

package main

import "testing"

func TestIsQuery(t *testing.T) {
	tests := []struct {
		sql  string
		want bool
	}{
		{"select 1", true},
		{"-- q\n  WITH x AS (SELECT 1) SELECT * FROM x", true},
		{"create view v as select 1", false},
		{"drop view revenue0", false},
		{"-- only a comment", false},
	}
	for _, tc := range tests {
		if got := isQuery(tc.sql); got != tc.want {
			t.Errorf("isQuery(%q) = %v, want %v", tc.sql, got, tc.want)
		}
	}
}
