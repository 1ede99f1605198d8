//go:build !duckdb_arrow

package main

import (
	"fmt"
	"os"
)

// The peer reads DuckDB's results through its Arrow interface, which
// duckdb-go compiles only with the duckdb_arrow build tag.
func main() {
	fmt.Fprintln(os.Stderr, "Error: build the DuckDB peer with -tags duckdb_arrow (make bench does)")
	os.Exit(2)
}
