package sql

import (
	"encoding/json"

	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

// JSON is text holding JSON (see physical/expr/funcs_json.go): casts to
// json and jsonb check it, -> and ->> read into it, and the functions
// registered here take it as VARCHAR.

func addJSONFunctions(fs map[string]*funcDef) {
	scalar := func(bind func(c *fcall) (plan.Expr, error), sigs ...funcSig) *funcDef {
		return &funcDef{kind: KindScalar, bind: bind, sigs: sigs}
	}
	for name, def := range map[string]*funcDef{
		"json_extract_path":      scalar(textTo("json_extract_path", plan.Utf8, 2, 1<<16), sig("VARCHAR json, VARCHAR key, ...", "VARCHAR")),
		"json_extract_path_text": scalar(textTo("json_extract_path_text", plan.Utf8, 2, 1<<16), sig("VARCHAR json, VARCHAR key, ...", "VARCHAR")),
		"json_extract":           scalar(textTo("json_extract", plan.Utf8, 2, 2), sig("VARCHAR json, VARCHAR path", "VARCHAR")),
		"json_extract_string":    scalar(textTo("json_extract_string", plan.Utf8, 2, 2), sig("VARCHAR json, VARCHAR path", "VARCHAR")),
		"json_typeof":            scalar(textTo("json_typeof", plan.Utf8, 1, 1), sig("VARCHAR json", "VARCHAR")),
		"json_valid":             scalar(textTo("json_valid", plan.Bool, 1, 1), sig("VARCHAR", "BOOLEAN")),
		"json_array_length":      scalar(textTo("json_array_length", plan.Int64, 1, 2), sig("VARCHAR json", "BIGINT"), sig("VARCHAR json, VARCHAR path", "BIGINT")),
	} {
		fs[name] = def
	}
	for _, name := range []string{"extract_path", "extract_path_text", "typeof", "array_length"} {
		fs["jsonb_"+name] = fs["json_"+name]
	}
}

// jsonArrow binds j -> k and j ->> k: k text is a key (or, starting with
// '$' or '/', a DuckDB path), k an integer an array index.
func (b *binder) jsonArrow(op string, l, r plan.Expr, loc int32) (plan.Expr, error) {
	if t := l.Type(); t.ID() != plan.Utf8.ID() && t.ID() != plan.Null.ID() {
		return nil, b.errAt("type", loc, "operator %s needs JSON (text) on its left, not %s", op, plan.TypeName(t))
	}
	switch t := r.Type(); {
	case plan.IsInteger(t):
		r = coerce(r, plan.Int64)
	case t.ID() == plan.Utf8.ID(), t.ID() == plan.Null.ID():
		r = coerce(r, plan.Utf8)
	default:
		return nil, b.errAt("type", loc, "operator %s takes a text key or an integer index, not %s", op, plan.TypeName(t))
	}
	name := "json_get"
	if op == "->>" {
		name = "json_get_text"
	}
	return &plan.Func{Name: name, Args: []plan.Expr{coerce(l, plan.Utf8), r}, Typ: plan.Utf8}, nil
}

// jsonCast binds x::json (and ::jsonb): the text, checked to be JSON; a
// constant is checked here, so a typo fails at its place in the query.
func (b *binder) jsonCast(tc *pg.TypeCast, c ectx) (plan.Expr, error) {
	x, err := b.expr(tc.Arg, c)
	if err != nil {
		return nil, err
	}
	if t := x.Type(); t.ID() != plan.Utf8.ID() && t.ID() != plan.Null.ID() {
		return nil, b.errAt("type", tc.Location, "cannot cast %s to json", plan.TypeName(t))
	}
	if lit, ok := x.(*plan.Literal); ok {
		if s, ok := lit.Val.(string); ok && !json.Valid([]byte(s)) {
			return nil, b.errAt("type", nodeLoc(tc.Arg), "invalid input syntax for type json: %q", s)
		}
		return coerce(x, plan.Utf8), nil
	}
	return &plan.Func{Name: "json_check", Args: []plan.Expr{coerce(x, plan.Utf8)}, Typ: plan.Utf8}, nil
}
