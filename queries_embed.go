package main

import "embed"

// tpchQueries holds the 22 TPC-H query scripts and the benchmark's
// streaming queries (s1.sql ...), so that sluice bench runs from any
// directory.
//
//go:embed testdata/tpch/*.sql testdata/streaming/*.sql
var tpchQueries embed.FS
