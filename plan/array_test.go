package plan

import "testing"

func TestAppendArrayText(t *testing.T) {
	for _, c := range []struct {
		elems []any // string or nil
		want  string
	}{
		{nil, "{}"},
		{[]any{"a", "b"}, "{a,b}"},
		{[]any{"a", nil}, "{a,NULL}"},
		{[]any{"NULL", "null", "nulls"}, `{"NULL","null",nulls}`},
		{[]any{"", "c d", `q"b\`}, `{"","c d","q\"b\\"}`},
		{[]any{"{x}", "a,b", "tab\there"}, "{\"{x}\",\"a,b\",\"tab\there\"}"},
		{[]any{"héllo", "123"}, "{héllo,123}"},
	} {
		got := string(AppendArrayText(nil, len(c.elems), func(i int) (string, bool) {
			s, ok := c.elems[i].(string)
			return s, ok
		}))
		if got != c.want {
			t.Errorf("%v: got %s, want %s", c.elems, got, c.want)
		}
	}
}
