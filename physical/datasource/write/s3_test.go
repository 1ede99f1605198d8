package write

import (
	"context"
	"errors"
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/catalog"
	"sluice/catalog/s3fake"
	"sluice/physical"
)

// objectsUnder lists the object names under an s3:// folder, relative to
// it and sorted, and the URLs of the uploads still open there.
func objectsUnder(t *testing.T, dir string) (objects, uploads []string) {
	t.Helper()
	objs, err := catalog.ListS3(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		objects = append(objects, strings.TrimPrefix(o.Path, dir+"/"))
	}
	sort.Strings(objects)
	if err := catalog.AbortS3Uploads(context.Background(), dir, func(url string) bool {
		uploads = append(uploads, url)
		return false
	}); err != nil {
		t.Fatal(err)
	}
	return objects, uploads
}

// Writing to an object store: two attempts of the same task each stage an
// upload; only the listed one is completed, the other is aborted with
// the leftovers; nothing is visible before the commit; a repeated commit
// succeeds; a failed job's objects go.
func TestWriteToObjectStoreCommitsOnce(t *testing.T) {
	srv := s3fake.Start(t)
	srv.CreateBucket(t, "lake")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := writeTestSource(t, mem)
	defer src.release()
	dir := "s3://lake/out"
	spec := writeTestSpec(dir, "parquet", 7)
	if err := CheckTarget(&spec, false, "COPY"); err != nil {
		t.Fatal(err)
	}
	sink, err := NewFileSink(src, spec)
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 0; attempt < 2; attempt++ {
		collectPartitions(t, sink, newTestTC(mem, 8192))
	}
	objs, ups := objectsUnder(t, dir)
	if len(objs) != 0 || len(ups) != 8 {
		t.Fatalf("before the commit: objects %q, uploads %q; want none and 8 (4 files x 2 attempts)", objs, ups)
	}
	commit, err := NewWriteCommit(physical.NewCoalescePartitions(sink), spec)
	if err != nil {
		t.Fatal(err)
	}
	tc := newTestTC(mem, 8192)
	if n, err := execCount(t, commit, tc); err != nil || n != 6 {
		t.Fatalf("commit task: %d, %v", n, err)
	}
	for range 2 {
		if err := CommitFiles(&spec, tc.Commit.Files()); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveLeftovers(&spec, false); err != nil {
		t.Fatal(err)
	}
	objs, ups = objectsUnder(t, dir)
	if len(objs) != 4 || len(ups) != 0 {
		t.Fatalf("after the commit: objects %q, uploads %q; want 4 and none", objs, ups)
	}
	for _, o := range objs {
		if !strings.HasPrefix(o, "bo=") || !strings.HasPrefix(path.Base(o), "part-"+spec.WriteID+"-") {
			t.Errorf("object %s: want bo=value/part-%s-...", o, spec.WriteID)
		}
	}
	tbl, err := catalog.OpenParquet(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := tbl.Statistics().NumRows; n != 6 {
		t.Errorf("read back %d rows, want 6", n)
	}
	// A commit with a file of another write is refused.
	bad := []physical.CommitFile{{Temp: tc.Commit.Files()[0].Temp, Final: dir + "/../elsewhere.parquet"}}
	if err := CommitFiles(&spec, bad); err == nil {
		t.Error("a commit outside the folder was accepted")
	}
	if err := RemoveLeftovers(&spec, true); err != nil {
		t.Fatal(err)
	}
	if objs, _ := objectsUnder(t, dir); len(objs) != 0 {
		t.Fatalf("objects of a failed write left: %q", objs)
	}
	// Now the folder is empty again; an object at the folder's own name
	// is refused as a target.
	srv.Put(t, "lake", "file", []byte("x"))
	fileSpec := writeTestSpec("s3://lake/file", "csv")
	if err := CheckTarget(&fileSpec, false, "COPY"); err == nil || !strings.Contains(err.Error(), "is an object") {
		t.Errorf("target that is an object: %v", err)
	}
	rootSpec := writeTestSpec("s3://lake", "csv")
	if err := CheckTarget(&rootSpec, false, "COPY"); err == nil || !strings.Contains(err.Error(), "root of a bucket") {
		t.Errorf("bucket root target: %v", err)
	}
}

// A failing partition aborts its uploads; the finished partition's stay
// open (never visible) until the job's cleanup aborts them.
func TestWriteToObjectStoreFailure(t *testing.T) {
	srv := s3fake.Start(t)
	srv.CreateBucket(t, "lake")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := writeTestSource(t, mem)
	defer src.release()
	src.errPart, src.errAt = 0, 1
	dir := "s3://lake/fail"
	spec := writeTestSpec(dir, "csv", 6)
	if _, err := runWrite(t, src, spec, newTestTC(mem, 8192)); !errors.Is(err, errInjected) {
		t.Fatalf("err = %v, want the injected failure", err)
	}
	objs, ups := objectsUnder(t, dir)
	for _, u := range ups {
		if !strings.Contains(u, "-00001-") {
			t.Errorf("upload of the failed partition left open: %s", u)
		}
	}
	if len(objs) != 0 {
		t.Errorf("objects visible after a failed write: %q", objs)
	}
	if err := RemoveLeftovers(&spec, true); err != nil {
		t.Fatal(err)
	}
	if objs, ups := objectsUnder(t, dir); len(objs) != 0 || len(ups) != 0 {
		t.Fatalf("after cleanup: objects %q, uploads %q", objs, ups)
	}
}
