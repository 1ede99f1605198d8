package expr

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// JSON values are text (VARCHAR) holding JSON, as PostgreSQL's json type
// keeps its input: the functions here parse it row by row with
// encoding/json and return subvalues as the exact text they had. Text
// that is not JSON is a data error, as in PostgreSQL. A path step that
// finds nothing (a missing key, an index past the end, a key asked of an
// array or an index of an object) makes the row NULL.
//
//	json_get(j, k)            j -> k   (k text: a key; k integer: an index,
//	json_get_text(j, k)       j ->> k   negative from the end; text starting
//	                                    with '$' or '/': a path, as DuckDB)
//	json_extract_path(j, k, ...)      PostgreSQL: text steps index arrays
//	json_extract_path_text(j, k, ...) when they are integers
//	json_extract(j, path)             DuckDB: a JSONPath ('$.a[0]'), a JSON
//	json_extract_string(j, path)      pointer ('/a/0') or a key
//	json_typeof(j), json_valid(j), json_array_length(j), json_check(j)

// jsonStep is one step of a path into a JSON value.
type jsonStep struct {
	key   string
	index int64
	isIdx bool
	// loose: a key that indexes an array when it is an integer
	// (PostgreSQL's path functions).
	loose bool
}

// jsonParsePath reads a DuckDB JSONPath ($, .key, ."key", [n], ["key"],
// [#-n]) or a JSON pointer (/a/0, ~0 and ~1 escaped).
func jsonParsePath(p string) ([]jsonStep, error) {
	if strings.HasPrefix(p, "/") {
		var steps []jsonStep
		for _, part := range strings.Split(p[1:], "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			steps = append(steps, jsonStep{key: part, loose: true})
		}
		return steps, nil
	}
	bad := func() ([]jsonStep, error) { return nil, dataErrorf("invalid JSON path %q", p) }
	if !strings.HasPrefix(p, "$") {
		return bad()
	}
	var steps []jsonStep
	rest := p[1:]
	for rest != "" {
		switch rest[0] {
		case '.':
			rest = rest[1:]
			if strings.HasPrefix(rest, `"`) {
				end := strings.Index(rest[1:], `"`)
				if end < 0 {
					return bad()
				}
				steps = append(steps, jsonStep{key: rest[1 : end+1]})
				rest = rest[end+2:]
				continue
			}
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			if end == 0 {
				return bad()
			}
			steps = append(steps, jsonStep{key: rest[:end]})
			rest = rest[end:]
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return bad()
			}
			in := strings.TrimSpace(rest[1:end])
			rest = rest[end+1:]
			if len(in) >= 2 && in[0] == '"' && in[len(in)-1] == '"' {
				steps = append(steps, jsonStep{key: in[1 : len(in)-1]})
				continue
			}
			if strings.HasPrefix(in, "#-") {
				in = in[1:] // [#-1] is the last element
			}
			n, err := strconv.ParseInt(in, 10, 64)
			if err != nil {
				return bad()
			}
			steps = append(steps, jsonStep{index: n, isIdx: true})
		default:
			return bad()
		}
	}
	return steps, nil
}

// jsonWalk returns the text of the value at steps in doc, or ok false when
// a step finds nothing; a doc that is not JSON is an error. The first
// step's Unmarshal checks the whole document; a walk that makes none (no
// steps, or a first step that finds nothing in a scalar) checks it with
// json.Valid, so that invalid text fails whatever the path, and is not
// scanned twice when it is checked anyway.
func jsonWalk(doc []byte, steps []jsonStep) (raw []byte, ok bool, err error) {
	checked := false
	missing := func() ([]byte, bool, error) {
		if !checked && !json.Valid(doc) {
			return nil, false, jsonInvalid(doc)
		}
		return nil, false, nil
	}
	cur := bytes.TrimSpace(doc)
	for _, s := range steps {
		switch {
		case len(cur) > 0 && cur[0] == '{':
			if s.isIdx {
				return missing()
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(cur, &obj); err != nil {
				return nil, false, jsonInvalid(doc)
			}
			checked = true
			v, found := obj[s.key]
			if !found {
				return nil, false, nil
			}
			cur = bytes.TrimSpace(v)
		case len(cur) > 0 && cur[0] == '[':
			idx := s.index
			if !s.isIdx {
				n, err := strconv.ParseInt(s.key, 10, 64)
				if !s.loose || err != nil {
					return missing()
				}
				idx = n
			}
			var arr []json.RawMessage
			if err := json.Unmarshal(cur, &arr); err != nil {
				return nil, false, jsonInvalid(doc)
			}
			checked = true
			if idx < 0 {
				idx += int64(len(arr))
			}
			if idx < 0 || idx >= int64(len(arr)) {
				return nil, false, nil
			}
			cur = bytes.TrimSpace(arr[idx])
		default:
			return missing()
		}
	}
	if !checked && !json.Valid(doc) {
		return nil, false, jsonInvalid(doc)
	}
	return cur, true, nil
}

func jsonInvalid(doc []byte) error {
	const show = 40
	s := string(doc)
	if len(s) > show {
		s = s[:show] + "..."
	}
	return dataErrorf("invalid input syntax for type json: %q", s)
}

// jsonText is the value raw as text (->>): a string unquoted, JSON null
// as SQL NULL (ok false), anything else as its JSON text.
func jsonText(raw []byte) ([]byte, bool, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, false, err
		}
		return []byte(s), true, nil
	}
	if string(raw) == "null" {
		return nil, false, nil
	}
	return raw, true, nil
}

// jsonSteps turns one argument of row after row into path steps: an
// integer index, or a key (a path when pathy and it starts with '$' or
// '/'). It remembers the last text it read, so a constant path is parsed
// once, not once per row.
type jsonSteps struct {
	key   string
	steps []jsonStep
	known bool
}

func (c *jsonSteps) of(a rowArg, i int, loose, pathy bool) ([]jsonStep, error) {
	if a.ints != nil {
		c.known = false
		c.steps = append(c.steps[:0], jsonStep{index: a.int(i), isIdx: true})
		return c.steps, nil
	}
	k := a.str(i)
	if c.known && string(k) == c.key {
		return c.steps, nil
	}
	c.key, c.known = string(k), false
	if pathy && (strings.HasPrefix(c.key, "$") || strings.HasPrefix(c.key, "/")) {
		steps, err := jsonParsePath(c.key)
		if err != nil {
			return nil, err
		}
		c.steps = steps
	} else {
		c.steps = append(c.steps[:0], jsonStep{key: c.key, loose: loose})
	}
	c.known = true
	return c.steps, nil
}

// jsonGetKernel computes the json_get family: text says whether the value
// is returned as text (->>) or as JSON; loose and pathy say how text
// steps read (see jsonStep, jsonStepsOf).
func jsonGetKernel(text, loose, pathy bool) rowKernel {
	return func(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
		b := newStringBuilder(mem, n, 0)
		var steps []jsonStep
		readers := make([]jsonSteps, len(args))
		for i := 0; i < n; i++ {
			if !allValid(args, i) {
				b.b.AppendNull()
				continue
			}
			steps = steps[:0]
			for k, a := range args[1:] {
				s, err := readers[k].of(a, i, loose, pathy)
				if err != nil {
					b.b.Release()
					return nil, err
				}
				steps = append(steps, s...)
			}
			raw, ok, err := jsonWalk(args[0].str(i), steps)
			if err == nil && ok && text {
				raw, ok, err = jsonText(raw)
			}
			if err != nil {
				b.b.Release()
				return nil, err
			}
			if !ok {
				b.b.AppendNull()
				continue
			}
			if err := b.append(raw); err != nil {
				return nil, err
			}
		}
		return b.finish(), nil
	}
}

// jsonKind names the JSON type of raw, as PostgreSQL's json_typeof.
func jsonKind(raw []byte) string {
	switch {
	case len(raw) == 0:
		return ""
	case raw[0] == '{':
		return "object"
	case raw[0] == '[':
		return "array"
	case raw[0] == '"':
		return "string"
	case raw[0] == 't' || raw[0] == 'f':
		return "boolean"
	case raw[0] == 'n':
		return "null"
	}
	return "number"
}

// jsonTypeof is json_typeof(j).
func jsonTypeof(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	return textRows(n, args, true, mem, func(i int, dst []byte) ([]byte, error) {
		doc := args[0].str(i)
		if !json.Valid(doc) {
			return nil, jsonInvalid(doc)
		}
		return append(dst, jsonKind(bytes.TrimSpace(doc))...), nil
	})
}

// jsonCheck is a cast to json: the text itself, if it is JSON.
func jsonCheck(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	return textRows(n, args, true, mem, func(i int, dst []byte) ([]byte, error) {
		doc := args[0].str(i)
		if !json.Valid(doc) {
			return nil, jsonInvalid(doc)
		}
		return append(dst, doc...), nil
	})
}

// jsonValid is json_valid(j) (DuckDB): whether the text is JSON.
func jsonValid(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	b.Reserve(n)
	for i := 0; i < n; i++ {
		if !args[0].valid(i) {
			b.AppendNull()
			continue
		}
		b.Append(json.Valid(args[0].str(i)))
	}
	return b.NewArray(), nil
}

// jsonArrayLength is json_array_length(j[, path]): the elements of an
// array; a value that is not an array is an error (PostgreSQL's rule), a
// path that finds nothing NULL.
func jsonArrayLength(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	var path jsonSteps
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Reserve(n)
	for i := 0; i < n; i++ {
		if !allValid(args, i) {
			b.AppendNull()
			continue
		}
		var steps []jsonStep
		if len(args) > 1 {
			var err error
			if steps, err = path.of(args[1], i, true, true); err != nil {
				return nil, err
			}
		}
		raw, ok, err := jsonWalk(args[0].str(i), steps)
		if err != nil {
			return nil, err
		}
		if !ok {
			b.AppendNull()
			continue
		}
		if kind := jsonKind(raw); kind != "array" {
			return nil, dataErrorf("cannot get array length of a non-array (%s)", kind)
		}
		var arr []json.RawMessage
		if err := json.Unmarshal(raw, &arr); err != nil {
			return nil, jsonInvalid(raw)
		}
		b.Append(int64(len(arr)))
	}
	return b.NewArray(), nil
}

func init() {
	for name, f := range map[string]struct {
		k      rowKernel
		lo, hi int
	}{
		"json_get":               {jsonGetKernel(false, false, true), 2, 2},
		"json_get_text":          {jsonGetKernel(true, false, true), 2, 2},
		"json_extract_path":      {jsonGetKernel(false, true, false), 1, 1 << 16},
		"json_extract_path_text": {jsonGetKernel(true, true, false), 1, 1 << 16},
		"json_extract":           {jsonGetKernel(false, true, true), 2, 2},
		"json_extract_string":    {jsonGetKernel(true, true, true), 2, 2},
		"json_typeof":            {jsonTypeof, 1, 1},
		"json_valid":             {jsonValid, 1, 1},
		"json_array_length":      {jsonArrayLength, 1, 2},
		"json_check":             {jsonCheck, 1, 1},
	} {
		funcArity[name] = [2]int{f.lo, f.hi}
		rowFuncs[name] = f.k
	}
}
