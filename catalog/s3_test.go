package catalog

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"sluice/catalog/s3fake"
)

// TestS3Listing: a prefix lists the objects under it with the extension
// (folder markers and other files skipped, recursively, sorted); a key
// without its slash is the prefix too; a glob matches keys within one
// level; a single key is one file.
func TestS3Listing(t *testing.T) {
	srv := s3fake.Start(t)
	srv.CreateBucket(t, "bkt")
	for _, k := range []string{"d/2.csv", "d/1.csv", "d/sub/3.CSV", "d/notes.txt", "d/", "dx/4.csv"} {
		srv.Put(t, "bkt", k, []byte("a,b\n1,2\n"))
	}
	cases := []struct {
		loc  string
		want string
	}{
		{"s3://bkt/d/", "s3://bkt/d/1.csv s3://bkt/d/2.csv s3://bkt/d/sub/3.CSV"},
		{"s3://bkt/d", "s3://bkt/d/1.csv s3://bkt/d/2.csv s3://bkt/d/sub/3.CSV"},
		{"s3://bkt/d/*.csv", "s3://bkt/d/1.csv s3://bkt/d/2.csv"},
		{"s3://bkt/d*/*.csv", "s3://bkt/d/1.csv s3://bkt/d/2.csv s3://bkt/dx/4.csv"},
		{"s3://bkt/d/2.csv", "s3://bkt/d/2.csv"},
		{"s3://bkt/", "s3://bkt/d/1.csv s3://bkt/d/2.csv s3://bkt/d/sub/3.CSV s3://bkt/dx/4.csv"},
	}
	for _, c := range cases {
		files, err := listFiles(c.loc, ".csv")
		if err != nil {
			t.Errorf("%s: %v", c.loc, err)
			continue
		}
		var got []string
		for _, f := range files {
			if f.Size != 8 || f.ETag == "" || f.ModTime == 0 {
				t.Errorf("%s: %+v lacks size, entity tag or time", c.loc, f)
			}
			got = append(got, f.Path)
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s: %v, want %s", c.loc, got, c.want)
		}
	}
	for loc, want := range map[string]string{
		"s3://bkt/nope":        "object s3://bkt/nope does not exist, and no objects are under s3://bkt/nope/",
		"s3://bkt/d/*.parquet": "no objects match s3://bkt/d/*.parquet",
		"s3://nobucket/x":      `bucket "nobucket" does not exist`,
		"s3:///x.csv":          "an s3:// URL names a bucket",
	} {
		if _, err := listFiles(loc, ".csv"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", loc, err, want)
		}
	}
	if f, err := FormatOf("s3://bkt/d/"); err != nil || f != FormatCSV {
		t.Errorf("format of a prefix of CSV objects: %v %v", f, err)
	}
}

// TestS3ObjectReads: reads at any offset fetch just their range, reads
// near the end are served from one fetch of the tail, short reads at the
// end say io.EOF, and an object written again fails the read.
func TestS3ObjectReads(t *testing.T) {
	srv := s3fake.Start(t)
	srv.CreateBucket(t, "bkt")
	data := make([]byte, 3*s3TailBytes)
	for i := range data {
		data[i] = byte(i * 7)
	}
	srv.Put(t, "bkt", "o.bin", data)
	files, err := listFiles("s3://bkt/o.bin", "")
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenFile(context.Background(), files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if end, err := r.Seek(0, io.SeekEnd); err != nil || end != int64(len(data)) || r.Size() != end {
		t.Fatalf("seek end: %d %v", end, err)
	}
	srv.Reset()
	buf := make([]byte, 100)
	check := func(off int64, wantN int, wantErr error) {
		t.Helper()
		n, err := r.ReadAt(buf, off)
		if n != wantN || !errors.Is(err, wantErr) && err != wantErr {
			t.Fatalf("ReadAt(%d) = %d, %v; want %d, %v", off, n, err, wantN, wantErr)
		}
		if string(buf[:n]) != string(data[off:off+int64(n)]) {
			t.Fatalf("ReadAt(%d): wrong bytes", off)
		}
	}
	check(1000, 100, nil)
	if srv.Gets() != 1 || srv.GetBytes() != 100 {
		t.Fatalf("one read of 100 bytes: %d requests, %d bytes", srv.Gets(), srv.GetBytes())
	}
	check(int64(len(data))-100, 100, nil)
	check(int64(len(data))-8, 8, io.EOF)
	check(int64(len(data))-s3TailBytes, 100, nil)
	if srv.Gets() != 2 || srv.GetBytes() != 100+s3TailBytes {
		t.Fatalf("tail reads: %d requests, %d bytes", srv.Gets(), srv.GetBytes())
	}
	check(int64(len(data)), 0, io.EOF)

	srv.Put(t, "bkt", "o.bin", append(data, 1))
	if _, err := r.ReadAt(buf, 0); !errors.Is(err, ErrFilesChanged) {
		t.Fatalf("read of a rewritten object: %v", err)
	}
	srv.Delete(t, "bkt", "o.bin")
	if _, err := r.ReadAt(buf, 0); !errors.Is(err, ErrFilesChanged) {
		t.Fatalf("read of a removed object: %v", err)
	}
}

// TestS3Locations: s3:// entries of --allowed-locations allow what lies
// under them as a folder; other buckets, sibling prefixes and ".." are
// refused, as are other URL schemes in the flag.
func TestS3Locations(t *testing.T) {
	if _, err := NewLocations([]string{"gs://b/x"}); err == nil {
		t.Error("a gs:// allowed location was accepted")
	}
	if _, err := NewLocations([]string{"s3://bkt/x*"}); err == nil {
		t.Error("a pattern as allowed location was accepted")
	}
	l, err := NewLocations([]string{"s3://bkt/data", "s3://whole"})
	if err != nil {
		t.Fatal(err)
	}
	for loc, ok := range map[string]bool{
		"s3://bkt/data":             true,
		"s3://bkt/data/":            true,
		"s3://bkt/data/x/y.parquet": true,
		"s3://whole/any/thing.csv":  true,
		"s3://whole":                true,
		"s3://bkt/database/x":       false,
		"s3://bkt/":                 false,
		"s3://c/data/x":             false,
		"s3://bkt/data/../secret/x": false,
	} {
		err := l.checkURL(loc)
		if (err == nil) != ok || err != nil && !errors.Is(err, ErrLocationNotAllowed) {
			t.Errorf("%s: %v, want allowed=%v", loc, err, ok)
		}
	}
	none, _ := NewLocations(nil)
	if err := none.checkURL("s3://bkt/x"); err == nil || !strings.Contains(err.Error(), "reads no object store locations") {
		t.Errorf("no locations: %v", err)
	}
}

// TestS3EndpointErrors: an endpoint nothing listens on, and one that is
// not a URL, fail with errors naming the variable.
func TestS3EndpointErrors(t *testing.T) {
	s3fake.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("AWS_ENDPOINT_URL", "http://"+addr)
	if _, err := listFiles("s3://bkt/x.csv", ".csv"); err == nil || !strings.Contains(err.Error(), "cannot reach the object store at "+addr) || !strings.Contains(err.Error(), "check AWS_ENDPOINT_URL") {
		t.Errorf("closed port: %v", err)
	}
	t.Setenv("AWS_ENDPOINT_URL", "127.0.0.1:9000")
	if _, err := listFiles("s3://bkt/x.csv", ".csv"); err == nil || !strings.Contains(err.Error(), `AWS_ENDPOINT_URL "127.0.0.1:9000" is not an http:// or https:// URL`) {
		t.Errorf("endpoint without scheme: %v", err)
	}
}
