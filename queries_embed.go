package main

import "embed"

// tpchQueries holds the 22 TPC-H query scripts, so that sluice bench runs
// from any directory.
//
//go:embed testdata/tpch/*.sql
var tpchQueries embed.FS
