package physical

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sluice/catalog"
	"sluice/catalog/s3fake"
)

// TestScanProtoCarriesObjectList: a scan of an object store table carries
// the planner's file list (paths, sizes, entity tags) to executors, which
// open the table from it rather than listing again; a local table carries
// none, since every host lists its own copy. The decoded scans read the
// same rows.
func TestScanProtoCarriesObjectList(t *testing.T) {
	srv := s3fake.Start(t)
	srv.CreateBucket(t, "lake")
	localPQ, localCSV := protoTables(t)
	for _, f := range localPQ.Files {
		data, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		srv.Put(t, "lake", "pq/"+filepath.Base(f.Path), data)
	}
	for _, f := range localCSV.Files {
		data, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		srv.Put(t, "lake", "csv/"+filepath.Base(f.Path), data)
	}
	pq, err := catalog.OpenParquet("s3://lake/pq/")
	if err != nil {
		t.Fatal(err)
	}
	csv, err := catalog.OpenCSV("s3://lake/csv/", catalog.CSVOptions{Header: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []Operator{NewParquetScan("pq", pq, []int{0, 1}, nil, 2), NewCSVScan("csv", csv, []int{0}, 2)} {
		p, err := EncodePlan(op, nil)
		if err != nil {
			t.Fatal(err)
		}
		files := p.GetParquetScan().GetFiles()
		if p.GetCsvScan() != nil {
			files = p.GetCsvScan().GetFiles()
		}
		if len(files) == 0 || files[0].GetEtag() == "" {
			t.Fatalf("%s: encoded without its object list", Format(op))
		}
		// An object added under the prefix after planning: listing
		// again would take it in (and fail on it); the plan's list
		// does not.
		srv.Put(t, "lake", "pq/extra.parquet", []byte("not parquet at all"))
		got := shipPlan(t, op, nil)
		srv.Delete(t, "lake", "pq/extra.parquet")
		var want, have []catalog.FileInfo
		switch s := got.(type) {
		case *ParquetScan:
			want, have = pq.FileInfos(), s.table.FileInfos()
		case *CSVScan:
			want, have = csv.FileInfos(), s.table.FileInfos()
		}
		if !reflect.DeepEqual(want, have) {
			t.Errorf("decoded table files %v, want %v", have, want)
		}
		sameResults(t, op, got, true)
	}
	for _, op := range []Operator{NewParquetScan("pq", localPQ, []int{0}, nil, 1), NewCSVScan("csv", localCSV, []int{0}, 1)} {
		p, err := EncodePlan(op, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.GetParquetScan().GetFiles())+len(p.GetCsvScan().GetFiles()) != 0 {
			t.Errorf("%s: a local table's scan carries a file list", Format(op))
		}
	}
}
