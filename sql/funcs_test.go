package sql

import (
	"fmt"
	"strings"
	"testing"

	"sluice/physical/expr"
	"sluice/plan"
)

// TestFunctionSignatures binds a call of every signature SHOW FUNCTIONS
// lists, with arguments of the listed types, and checks the result type
// where the listing names one: the listing cannot drift from the binder.
// Scalar calls are also compiled to their physical form, so every listed
// function exists on the executors too.
func TestFunctionSignatures(t *testing.T) {
	cat := testCatalog(t)
	// Arguments whose value matters (a field, a unit) get a valid constant.
	named := map[string]string{"field": "'year'", "unit": "'month'", "flags": "'i'", "pattern": "'a'"}
	kinds := map[string]int{}
	for _, f := range Functions() {
		kinds[f.Kind]++
		var args []string
		for _, a := range strings.Split(f.Args, ", ") {
			words := strings.Fields(a)
			switch {
			case len(words) == 0:
			case words[0] == "...":
				args = append(args, args[len(args)-1])
			case words[0] == "*":
				args = append(args, "*")
			case len(words) > 1 && words[0] == "VARCHAR" && named[words[1]] != "":
				args = append(args, named[words[1]])
			case words[0] == "any":
				args = append(args, "CAST(NULL AS VARCHAR)")
			case words[0] == "anyarray":
				args = append(args, "ARRAY[1]")
			case words[0] == "numeric":
				args = append(args, "CAST(NULL AS DOUBLE)")
			case words[0] == "INTERVAL":
				args = append(args, "INTERVAL '1' DAY")
			default:
				args = append(args, "CAST(NULL AS "+words[0]+")")
			}
		}
		call := fmt.Sprintf("%q(%s)", f.Name, strings.Join(args, ", "))
		if fraction, key, ok := strings.Cut(f.Args, ") WITHIN GROUP (ORDER BY "); ok {
			// An ordered-set aggregate: its fraction, then its value.
			arg := "CAST(NULL AS DOUBLE)"
			if key == "any" {
				arg = "CAST(NULL AS VARCHAR)"
			}
			call = fmt.Sprintf("%q() WITHIN GROUP (ORDER BY %s)", f.Name, arg) // mode()
			if words := strings.Fields(fraction); len(words) > 0 {
				call = fmt.Sprintf("%q(CAST(NULL AS %s)) WITHIN GROUP (ORDER BY %s)", f.Name, words[0], arg)
			}
		}
		q := "SELECT " + call
		switch f.Kind {
		case KindTable:
			q = "SELECT * FROM " + call
		case KindWindow:
			q = "SELECT " + call + " OVER ()"
		}
		t.Run(f.Name+"("+f.Args+")", func(t *testing.T) {
			b, err := bindOne(t, cat, q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			out := b.(*Query).Plan
			got := plan.TypeName(out.Schema()[0].Type)
			want := strings.TrimPrefix(f.Returns, "SETOF ")
			if _, concrete := typeNames[want]; concrete && got != want {
				t.Errorf("%s returns %s, SHOW FUNCTIONS says %s", q, got, f.Returns)
			}
			if p, ok := out.(*plan.Project); ok && f.Kind == KindScalar {
				for _, e := range p.Exprs {
					if _, err := expr.Compile(e, p.Input.Schema()); err != nil {
						t.Errorf("%s: does not compile: %v", q, err)
					}
				}
			}
		})
	}
	for _, k := range []string{KindScalar, KindAggregate, KindTable, KindWindow} {
		if kinds[k] == 0 {
			t.Errorf("no %s functions listed", k)
		}
	}
}

var typeNames = map[string]bool{"INT": true, "BIGINT": true, "DOUBLE": true, "VARCHAR": true, "BOOLEAN": true, "DATE": true, "TIMESTAMP": true, "VARCHAR[]": true}

// TestUnknownFunctionHint suggests a registered name.
func TestUnknownFunctionHint(t *testing.T) {
	_, err := bindOne(t, testCatalog(t), "select concat_wz('a', 'b')")
	e, ok := err.(*Error)
	if !ok || !strings.Contains(e.Hint, "concat_ws") {
		t.Fatalf("error %v, want a hint naming concat_ws", err)
	}
}

// TestWindowFunctionsListed: every window function the binder takes is in
// SHOW FUNCTIONS.
func TestWindowFunctionsListed(t *testing.T) {
	for name := range windowFuncs {
		if len(windowSigs[name]) == 0 {
			t.Errorf("window function %s has no signature for SHOW FUNCTIONS", name)
		}
	}
	for name := range windowSigs {
		if _, ok := windowFuncs[name]; !ok {
			t.Errorf("SHOW FUNCTIONS lists %s, which the binder does not take", name)
		}
	}
}
