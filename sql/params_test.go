package sql

import "testing"

func TestSubstituteParams(t *testing.T) {
	for _, c := range []struct {
		in   string
		lits []string
		want string
		err  bool
	}{
		{"SELECT a FROM t WHERE a = ? AND b = ?", []string{"1", "'x'"}, "SELECT a FROM t WHERE a = (1) AND b = ('x')", false},
		{"SELECT a FROM t WHERE a=? AND b<>?", []string{"1", "2"}, "SELECT a FROM t WHERE a=(1) AND b<>(2)", false},
		{"SELECT $2, $1, $2", []string{"1", "'b'"}, "SELECT ('b'), (1), ('b')", false},
		{"SELECT x - $1 FROM t", []string{"-5"}, "SELECT x - (-5) FROM t", false},
		{"SELECT '?', \"?\" -- ?\nFROM t WHERE a = ?", []string{"3"}, "SELECT '?', \"?\" -- ?\nFROM t WHERE a = (3)", false},
		{"SELECT 1", nil, "SELECT 1", false},
		{"SELECT ?", nil, "", true},
		{"SELECT 1", []string{"1"}, "", true},
		{"SELECT $1, ?", []string{"1", "2"}, "", true},
	} {
		got, err := SubstituteParams(c.in, c.lits)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%q %v: got %q, %v; want %q (error %v)", c.in, c.lits, got, err, c.want, c.err)
		}
	}
	if n, err := CountParams("SELECT $3 + $1"); n != 3 || err != nil {
		t.Errorf("CountParams = %d, %v; want 3", n, err)
	}
}
