package expr

import (
	"errors"
	"fmt"
	"regexp"
)

// DataError is an error of the query itself on its data: a division by
// zero, a string that is no number, a value out of its type's range. It
// fails the same way wherever and however often the query runs, so the
// cluster never retries it, and its Message is all the user needs to see;
// the rest of the error chain (operator, stage, task) is for the log.
type DataError struct {
	msg   string
	expr  string // the innermost expression that failed, once known
	cause error  // the error this one annotates with expr
}

// NewDataError returns a DataError saying msg.
func NewDataError(msg string) *DataError { return &DataError{msg: msg} }

func dataErrorf(format string, args ...any) error {
	return &DataError{msg: fmt.Sprintf(format, args...)}
}

// Error is the message with the expressions it passed through, as other
// wrapped errors read ("(a / b): division by zero").
func (e *DataError) Error() string {
	if e.cause != nil {
		return e.expr + ": " + e.cause.Error()
	}
	return e.msg
}

// Unwrap returns the error this one annotates, so errors.Is still finds
// the sentinel underneath.
func (e *DataError) Unwrap() error { return e.cause }

// Message is what the user needs: what went wrong and in which
// expression ("division by zero in (a / b)"), its columns by name without
// their input positions.
func (e *DataError) Message() string {
	if e.expr != "" {
		return e.msg + " in " + columnPosition.ReplaceAllString(e.expr, "$1")
	}
	return e.msg
}

// columnPosition matches the "@3" a compiled column reference prints after
// its name.
var columnPosition = regexp.MustCompile(`(\w)@\d+\b`)

// inExpr wraps err, from evaluating expression expr, with the expression's
// text; the first expression a data error passes through is the one the
// user is shown.
func inExpr(expr fmt.Stringer, err error) error {
	var de *DataError
	if errors.As(err, &de) && de.expr == "" {
		return &DataError{msg: de.msg, expr: expr.String(), cause: err}
	}
	return fmt.Errorf("%s: %w", expr, err)
}

// UserMessage returns the message of the data error in err's chain, and
// whether there is one.
func UserMessage(err error) (string, bool) {
	var de *DataError
	if !errors.As(err, &de) {
		return "", false
	}
	return de.Message(), true
}
