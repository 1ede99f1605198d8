package plan

import "testing"

// The expected regular expressions are PostgreSQL 15's similar_to_escape.
func TestSimilarToRegex(t *testing.T) {
	for _, c := range []struct{ pat, esc, want string }{
		{`a\`, `\`, `^(?:a)$`},
		{`%a_b(c|d)*[^]x]e.f$`, `#`, `^(?:.*a.b(?:c|d)*[^]x]e\.f\$)$`},
		{`a#"b#"c`, `#`, `^(?:a){1,1}?(b){1,1}(?:c)$`},
		{`[[:alpha:]\]`, ``, `^(?:[[:alpha:]\\])$`},
		{`a\%b\_`, `\`, `^(?:a\%b\_)$`},
		{`a%`, ``, `^(?:a.*)$`},
		{`ü_`, `\`, `^(?:ü.)$`},
	} {
		got, err := SimilarToRegex(c.pat, c.esc)
		if err != nil || got != c.want {
			t.Errorf("SimilarToRegex(%q, %q) = %q, %v; want %q", c.pat, c.esc, got, err, c.want)
		}
	}
	if _, err := SimilarToRegex("a", "ab"); err != ErrSimilarEscape {
		t.Errorf("two-character escape: %v", err)
	}
	if _, err := SimilarToRegex(`a#"b#"c#"d`, "#"); err == nil {
		t.Error("three separators are an error")
	}
}
