package expr

import (
	"testing"
)

func TestJSONPaths(t *testing.T) {
	doc := []byte(` {"a": {"b": [10, {"c": "z"}, null]}, "k.dot": 1, "x/y": 2, "": 3} `)
	for _, c := range []struct {
		path string
		want string // "" : nothing found
	}{
		{"$", `{"a": {"b": [10, {"c": "z"}, null]}, "k.dot": 1, "x/y": 2, "": 3}`},
		{"$.a.b[0]", "10"},
		{"$.a.b[1].c", `"z"`},
		{`$.a["b"][#-1]`, "null"},
		{"$.a.b[-2]", `{"c": "z"}`},
		{"$.a.b[3]", ""},
		{"$.a.c", ""},
		{"$.a.b.c", ""},
		{`$."k.dot"`, "1"},
		{"/x~1y", "2"},
		{"/a/b/1/c", `"z"`},
		{"/", "3"},
	} {
		steps, err := jsonParsePath(c.path)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		raw, ok, err := jsonWalk(doc, steps)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if got := string(raw); ok != (c.want != "") || got != c.want {
			t.Errorf("%s: got %q (found %v), want %q", c.path, got, ok, c.want)
		}
	}
	for _, bad := range []string{"a.b", "$.", "$[x]", "$[1", `$."a`, "$a"} {
		if _, err := jsonParsePath(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if _, _, err := jsonWalk([]byte(`{"a": 1`), nil); err == nil {
		t.Error("invalid JSON: no error")
	}
}
