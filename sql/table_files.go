package sql

import (
	"strconv"
	"strings"
	"unicode/utf8"

	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/catalog"
	"sluice/plan"
)

// fileFunctions are the table functions that read files by path, and the
// format each reads ("" infers it from the extension).
var fileFunctions = map[string]catalog.FileFormat{
	pathFunc:        "",
	"read_parquet":  catalog.FormatParquet,
	"read_csv":      catalog.FormatCSV,
	"read_csv_auto": catalog.FormatCSV,
}

// fileFunction binds FROM 'path' (rewritten to pathFunc by the front-end),
// read_parquet('path') and read_csv('path', header => true, delim => '|'):
// the path (a file, a directory of files, or a glob pattern) is opened
// now, on the planning side, and scanned like an external table's
// location, without registering anything. A bare path's relation is named
// after the file (trips for 'data/trips.parquet'), a function's after the
// function, as PostgreSQL names function calls in FROM.
func (b *binder) fileFunction(rf *pg.RangeFunction, f *pg.FuncCall, name string) (plan.Node, []scopeCol, error) {
	format := fileFunctions[name]
	shown := name
	if name == pathFunc {
		shown = "a path in FROM"
	}
	if f.AggStar || f.AggDistinct || f.Over != nil || f.AggFilter != nil || len(f.AggOrder) > 0 {
		return nil, nil, b.errAt("bind", f.Location, "invalid call of %s", shown)
	}
	var path string
	pathLoc := f.Location
	havePath := false
	opts := catalog.CSVOptions{}
	headerKnown := false
	for _, a := range f.Args {
		if havePath {
			// DuckDB writes options as name = value; PostgreSQL's grammar
			// reads that as a comparison with a column.
			if na := optionAsComparison(a); na != nil {
				a = &pg.Node{Node: &pg.Node_NamedArgExpr{NamedArgExpr: na}}
			}
		}
		if na := a.GetNamedArgExpr(); na != nil {
			if format != catalog.FormatCSV {
				return nil, nil, b.errAt("bind", na.Location, "%s takes no options (read_csv does)", shown)
			}
			opt := strings.ToLower(na.Name)
			val, ok := constText(na.Arg)
			if !ok {
				return nil, nil, b.errAt("bind", nodeLoc(na.Arg), "option %s of %s needs a constant", opt, name)
			}
			switch opt {
			case "header":
				h, err := strconv.ParseBool(strings.ToLower(val))
				if err != nil {
					return nil, nil, b.errAt("bind", nodeLoc(na.Arg), "option header wants true or false, not %s", val)
				}
				opts.Header, headerKnown = h, true
			case "delim", "delimiter", "sep":
				if opts.Delimiter, ok = readDelimiter(val); !ok {
					return nil, nil, b.errAt("bind", nodeLoc(na.Arg), "option %s must be a single character other than a quote or line break", opt)
				}
			default:
				return nil, nil, b.errAt("bind", na.Location, "unknown option %q of %s (it knows header and delim)", na.Name, name)
			}
			continue
		}
		if havePath {
			return nil, nil, b.errAt("bind", nodeLoc(a), "%s takes one path (a file, a directory or a glob pattern such as 'dir/*.parquet')", name)
		}
		s, ok := a.GetAConst().GetVal().(*pg.A_Const_Sval)
		if !ok || a.GetAConst().GetIsnull() {
			return nil, nil, b.errAt("bind", nodeLoc(a), "%s needs the path as a quoted string", shown)
		}
		path, pathLoc, havePath = s.Sval.GetSval(), nodeLoc(a), true
	}
	if !havePath {
		return nil, nil, b.errAt("bind", f.Location, "%s needs a path: %s('file or dir/*.glob')", name, name)
	}
	t, err := catalog.OpenPath(path, format, opts, headerKnown)
	if err != nil {
		return nil, nil, b.errAt("bind", pathLoc, "%v", err)
	}
	qual := name
	if name == pathFunc {
		qual = catalog.TableNameFor(path)
	}
	var aliases []string
	if rf.Alias != nil {
		qual = rf.Alias.Aliasname
		aliases = stringList(rf.Alias.Colnames)
	}
	r, err := renameColumns(b.fileScan(path, t, qual), aliases, qual)
	if err != nil {
		return nil, nil, err
	}
	return r.node, relationScope(r, qual), nil
}

// fileScan is the relation of every column of the table t opened from
// path, its columns qualified by qual.
func (b *binder) fileScan(path string, t catalog.Table, qual string) relation {
	fields := t.Schema().Fields()
	scan := &plan.Scan{TableName: path, Table: t, Projection: make([]int, len(fields)), Cols: make(plan.Schema, len(fields))}
	names := make([]string, len(fields))
	for i, fl := range fields {
		scan.Projection[i] = i
		scan.Cols[i] = plan.Column{ID: b.ids.Next(), Name: fl.Name, Table: qual, Type: fl.Type, Nullable: fl.Nullable}
		names[i] = fl.Name
	}
	return relation{node: scan, names: names}
}

// readDelimiter reads a CSV delimiter to read files with: one character,
// not a quote or a line break.
func readDelimiter(val string) (rune, bool) {
	if utf8.RuneCountInString(val) != 1 || val == "\n" || val == "\r" || val == `"` {
		return 0, false
	}
	r, _ := utf8.DecodeRuneInString(val)
	return r, true
}

// optionAsComparison reads name = constant as the named argument name =>
// constant, or returns nil.
func optionAsComparison(n *pg.Node) *pg.NamedArgExpr {
	e := n.GetAExpr()
	if e == nil || e.Kind != pg.A_Expr_Kind_AEXPR_OP {
		return nil
	}
	if op := stringList(e.Name); len(op) != 1 || op[0] != "=" {
		return nil
	}
	ref := e.Lexpr.GetColumnRef()
	if ref == nil || len(ref.Fields) != 1 || ref.Fields[0].GetString_() == nil {
		return nil
	}
	if _, ok := constText(e.Rexpr); !ok {
		return nil
	}
	return &pg.NamedArgExpr{Name: ref.Fields[0].GetString_().GetSval(), Arg: e.Rexpr, Location: ref.Location}
}

// constText is the text of a string, number or boolean constant (TRUE and
// 'true' both read as "true").
func constText(n *pg.Node) (string, bool) {
	c := n.GetAConst()
	if c == nil {
		if tc := n.GetTypeCast(); tc != nil {
			// PostgreSQL parses TRUE and FALSE as 't'::bool.
			if names := stringList(tc.GetTypeName().GetNames()); len(names) > 0 && names[len(names)-1] == "bool" {
				if v, ok := constText(tc.Arg); ok {
					return map[string]string{"t": "true", "f": "false"}[v], true
				}
			}
		}
		return "", false
	}
	if c.GetIsnull() {
		return "", false
	}
	switch v := c.GetVal().(type) {
	case *pg.A_Const_Sval:
		return v.Sval.GetSval(), true
	case *pg.A_Const_Ival:
		return strconv.Itoa(int(v.Ival.GetIval())), true
	case *pg.A_Const_Boolval:
		return strconv.FormatBool(v.Boolval.GetBoolval()), true
	}
	return "", false
}
