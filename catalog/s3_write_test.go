package catalog

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"sluice/catalog/s3fake"
)

// openUploads lists the open multipart uploads under dir through
// AbortS3Uploads' listing, without aborting any.
func openUploads(t *testing.T, dir string) []string {
	t.Helper()
	var keys []string
	if err := AbortS3Uploads(context.Background(), dir, func(url string) bool {
		keys = append(keys, url)
		return false
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestS3Upload: an upload of several parts is invisible until completed,
// then reads back byte for byte; completing it twice succeeds; an empty
// file is created at completion; an aborted upload leaves nothing.
func TestS3Upload(t *testing.T) {
	ctx := context.Background()
	srv := s3fake.Start(t)
	srv.CreateBucket(t, "bkt")

	data := make([]byte, 2*S3PartSize+12345)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	const url = "s3://bkt/out/a/part-0.bin"
	up, err := NewS3Upload(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(data); off += 100000 {
		if _, err := up.Write(data[off:min(off+100000, len(data))]); err != nil {
			t.Fatal(err)
		}
		if up.Pending() > 2*S3PartSize {
			t.Fatalf("upload holds %d bytes, more than two parts", up.Pending())
		}
	}
	if err := up.Close(); err != nil {
		t.Fatal(err)
	}
	ref := up.Ref()
	if n := len(strings.Fields(ref)); n < 3 {
		t.Fatalf("ref %q: want an upload ID and several parts", ref)
	}
	if objs, err := ListS3(ctx, "s3://bkt/out"); err != nil || len(objs) != 0 {
		t.Fatalf("before completion: objects %v (%v), want none", objs, err)
	}
	if ups := openUploads(t, "s3://bkt/out"); len(ups) != 1 || ups[0] != url {
		t.Fatalf("open uploads %q, want %s", ups, url)
	}
	for range 2 {
		if err := CompleteS3Upload(ctx, url, ref); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := ListS3(ctx, "s3://bkt/out/")
	if err != nil || len(objs) != 1 || objs[0].Size != int64(len(data)) {
		t.Fatalf("after completion: objects %v (%v)", objs, err)
	}
	rc, err := OpenStream(ctx, objs[0])
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes (%v), want the %d written", len(got), err, len(data))
	}

	empty, err := NewS3Upload(ctx, "s3://bkt/out/b/empty.csv")
	if err != nil {
		t.Fatal(err)
	}
	if err := empty.Close(); err != nil {
		t.Fatal(err)
	}
	if err := CompleteS3Upload(ctx, "s3://bkt/out/b/empty.csv", empty.Ref()); err != nil {
		t.Fatal(err)
	}
	if ok, err := S3ObjectExists(ctx, "s3://bkt/out/b/empty.csv"); !ok || err != nil {
		t.Fatalf("empty file: exists %v (%v)", ok, err)
	}

	dropped, err := NewS3Upload(ctx, "s3://bkt/out/c/x.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dropped.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := dropped.Abort(); err != nil {
		t.Fatal(err)
	}
	if ups := openUploads(t, "s3://bkt/out"); len(ups) != 0 {
		t.Fatalf("open uploads after abort: %q", ups)
	}
	if ok, _ := S3FolderEmpty(ctx, "s3://bkt/out/c"); !ok {
		t.Fatal("an aborted upload left an object")
	}

	// An upload another process left open is found and aborted.
	left, err := NewS3Upload(ctx, "s3://bkt/out/d/left.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := left.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := AbortS3Uploads(ctx, "s3://bkt/out", func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if ups := openUploads(t, "s3://bkt/out"); len(ups) != 0 {
		t.Fatalf("open uploads after AbortS3Uploads: %q", ups)
	}

	if err := RemoveS3Objects(ctx, []string{url, "s3://bkt/out/b/empty.csv", "s3://bkt/out/none"}); err != nil {
		t.Fatal(err)
	}
	if ok, err := S3FolderEmpty(ctx, "s3://bkt/out"); !ok || err != nil {
		t.Fatalf("after removal: empty %v (%v)", ok, err)
	}
}

// TestS3UploadCancelledWhileCreating: a write cancelled while the request
// creating its upload is in flight, which the store then serves, leaves
// no upload open once it is aborted. (The store creates the upload after
// the client's cancel; a client that stopped waiting would never learn
// the upload's ID, and no one would abort it.)
func TestS3UploadCancelledWhileCreating(t *testing.T) {
	srv := s3fake.Start(t)
	srv.CreateBucket(t, "bkt")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan struct{})
	srv.Wrap(func(r *http.Request, serve func()) {
		if r.Method == http.MethodPost && r.URL.Query().Has("uploads") {
			cancel()
			// The client sees the cancel before the store answers.
			time.Sleep(20 * time.Millisecond)
			serve()
			close(served)
			return
		}
		serve()
	})
	up, err := NewS3Upload(ctx, "s3://bkt/out/x.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := up.Write(make([]byte, S3PartSize)); err == nil {
		t.Fatal("a write whose context was cancelled succeeded")
	}
	if err := up.Abort(); err != nil {
		t.Fatal(err)
	}
	<-served
	if ups := openUploads(t, "s3://bkt/out"); len(ups) != 0 {
		t.Fatalf("open uploads after a cancelled write's abort: %q", ups)
	}

	// A write cancelled before it sends anything creates no upload.
	up, err = NewS3Upload(ctx, "s3://bkt/out/y.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := up.Write(make([]byte, S3PartSize)); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("write after cancel: %v, want a cancelled error", err)
	}
	if err := up.Abort(); err != nil {
		t.Fatal(err)
	}
	if ups := openUploads(t, "s3://bkt/out"); len(ups) != 0 {
		t.Fatalf("open uploads after a write cancelled before it began: %q", ups)
	}
}
