package catalog

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
)

// Writes to object storage. A written file is staged as an S3 multipart
// upload that is left open: its parts are stored by the object store but
// no object exists, so no listing or read sees it. Publishing the file is
// completing the upload, one small request with no data copied; dropping
// it is aborting the upload. This is how the write commit protocol (see
// physical/datasource/write) gets temporary files on a store that has no
// rename: the upload's ID plays the temporary name, unique per attempt.

// S3PartSize is how many bytes an upload buffers before it sends them as
// one part: above S3's 5 MiB minimum for every part but the last, small
// enough that a task writing many files at once holds little memory.
const S3PartSize = 8 << 20

// s3UploadPrefix starts every upload reference (S3Upload.Ref), so a
// commit tells a staged object from a local temporary path.
const s3UploadPrefix = "s3-upload:"

// s3EmptyRef is the reference of a file that has no bytes: S3 refuses
// empty parts, so such a file is staged nowhere and created at commit.
const s3EmptyRef = "s3-empty"

// The checksums of no bytes, which an empty object is uploaded with (see
// S3Upload.sendPart for why they are given).
const (
	emptyMD5    = "1B2M2Y8AsgTpgAmY7PhCfg=="
	emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// S3Upload writes one object as a multipart upload that stays open until
// CompleteS3Upload publishes it. It is an io.WriteCloser; Close sends the
// last part but does not complete the upload. Not safe for concurrent use.
type S3Upload struct {
	ctx         context.Context
	c           *s3Client
	url         string
	bucket, key string
	uploadID    string
	etags       []string
	buf         []byte
	closed      bool
	dropping    bool // Drop was called: bytes are thrown away
}

// NewS3Upload prepares an upload of the object at url; nothing is sent
// before the first part is full (or Close). ctx bounds its requests.
func NewS3Upload(ctx context.Context, url string) (*S3Upload, error) {
	if err := checkAllowed(url); err != nil {
		return nil, err
	}
	bucket, key, err := parseS3(url)
	if err != nil {
		return nil, err
	}
	if key == "" || strings.HasSuffix(key, "/") {
		return nil, fmt.Errorf("%s: not an object key", url)
	}
	c, err := s3ClientFor()
	if err != nil {
		return nil, err
	}
	return &S3Upload{ctx: ctx, c: c, url: url, bucket: bucket, key: key}, nil
}

// Write implements io.Writer: bytes are buffered and sent a part at a
// time.
func (u *S3Upload) Write(p []byte) (int, error) {
	if u.dropping {
		return len(p), nil
	}
	if u.closed {
		return 0, fmt.Errorf("write %s: upload closed", u.url)
	}
	u.buf = append(u.buf, p...)
	if len(u.buf) >= S3PartSize {
		if err := u.sendPart(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Pending is the number of bytes buffered and not yet sent.
func (u *S3Upload) Pending() int64 { return int64(cap(u.buf)) }

func (u *S3Upload) sendPart() error {
	if u.uploadID == "" {
		if err := u.ctx.Err(); err != nil {
			return fmt.Errorf("write %s: %w", u.url, err)
		}
		// Once sent, the request that creates the upload is not
		// cancelled with the write: the store may create the upload
		// after the client stopped waiting, and an upload whose ID was
		// never learned is aborted by no one (the write's clean-up lists
		// open uploads before the store has created it). It has a time
		// limit of its own instead.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(u.ctx), time.Minute)
		defer cancel()
		id, err := u.c.core.NewMultipartUpload(ctx, u.bucket, u.key, minio.PutObjectOptions{})
		if err != nil {
			return u.c.explain(u.url, err)
		}
		u.uploadID = id
	}
	n := len(u.etags) + 1
	// The part's checksums go with it: the store verifies the body, and
	// a given SHA-256 spares the client's chunked signing, which not
	// every S3-compatible store decodes for parts.
	sum := sha256.Sum256(u.buf)
	md := md5.Sum(u.buf)
	opts := minio.PutObjectPartOptions{Sha256Hex: hex.EncodeToString(sum[:]), Md5Base64: base64.StdEncoding.EncodeToString(md[:]), DisableContentSha256: true}
	part, err := u.c.core.PutObjectPart(u.ctx, u.bucket, u.key, u.uploadID, n, bytes.NewReader(u.buf), int64(len(u.buf)), opts)
	if err != nil {
		return u.c.explain(u.url, err)
	}
	u.etags = append(u.etags, trimETag(part.ETag))
	// A new buffer rather than u.buf[:0]: the memory goes back once the
	// file is done, and a reservation tracks Pending.
	u.buf = nil
	return nil
}

// Drop makes the upload throw away what it is written from now on, and
// its Close send nothing: the file is being abandoned (Abort follows), so
// its writer can be closed without uploading its last part.
func (u *S3Upload) Drop() {
	u.dropping = true
	u.buf = nil
}

// Close implements io.Closer: it sends the buffered bytes as the last
// part. The object is not visible until CompleteS3Upload.
func (u *S3Upload) Close() error {
	if u.closed {
		return nil
	}
	u.closed = true
	if u.dropping || len(u.buf) == 0 {
		u.buf = nil
		return nil
	}
	return u.sendPart()
}

// Ref is what CompleteS3Upload needs to publish the object, valid after a
// successful Close: the upload's ID and its parts' entity tags.
func (u *S3Upload) Ref() string {
	if u.uploadID == "" {
		return s3EmptyRef
	}
	return s3UploadPrefix + u.uploadID + " " + strings.Join(u.etags, " ")
}

// Abort drops the upload and its parts. It is given its own time limit,
// since it runs when the write's context may already be cancelled.
func (u *S3Upload) Abort() error {
	u.closed = true
	u.buf = nil
	if u.uploadID == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := u.c.core.AbortMultipartUpload(ctx, u.bucket, u.key, u.uploadID); err != nil {
		if r := minio.ToErrorResponse(err); r.Code != "NoSuchUpload" {
			return u.c.explain(u.url, err)
		}
	}
	u.uploadID = ""
	return nil
}

// IsS3UploadRef reports whether ref is an S3Upload's Ref.
func IsS3UploadRef(ref string) bool {
	return ref == s3EmptyRef || strings.HasPrefix(ref, s3UploadPrefix)
}

// CompleteS3Upload publishes the object url staged by the upload ref
// (S3Upload.Ref). Completing an upload that was already completed (a
// commit repeated) finds the object there, and succeeds.
func CompleteS3Upload(ctx context.Context, url, ref string) error {
	if err := checkAllowed(url); err != nil {
		return err
	}
	bucket, key, err := parseS3(url)
	if err != nil {
		return err
	}
	c, err := s3ClientFor()
	if err != nil {
		return err
	}
	if ref == s3EmptyRef {
		if _, err := c.core.PutObject(ctx, bucket, key, bytes.NewReader(nil), 0, emptyMD5, emptySHA256, minio.PutObjectOptions{DisableContentSha256: true}); err != nil {
			return c.explain(url, err)
		}
		return nil
	}
	fields := strings.Fields(strings.TrimPrefix(ref, s3UploadPrefix))
	if !strings.HasPrefix(ref, s3UploadPrefix) || len(fields) < 2 {
		return fmt.Errorf("%s: malformed upload reference %q", url, ref)
	}
	parts := make([]minio.CompletePart, len(fields)-1)
	for i, e := range fields[1:] {
		parts[i] = minio.CompletePart{PartNumber: i + 1, ETag: e}
	}
	_, err = c.core.CompleteMultipartUpload(ctx, bucket, key, fields[0], parts, minio.PutObjectOptions{})
	if err == nil {
		return nil
	}
	if r := minio.ToErrorResponse(err); r.Code == "NoSuchUpload" {
		if _, serr := c.core.StatObject(ctx, bucket, key, minio.StatObjectOptions{}); serr == nil {
			return nil
		}
	}
	return c.explain(url, err)
}

// ListS3 returns every object under the folder dir (an s3:// URL; its
// trailing slash is optional), sorted; none is not an error.
func ListS3(ctx context.Context, dir string) ([]FileInfo, error) {
	if err := checkAllowed(dir); err != nil {
		return nil, err
	}
	bucket, key, err := parseS3(dir)
	if err != nil {
		return nil, err
	}
	c, err := s3ClientFor()
	if err != nil {
		return nil, err
	}
	if key != "" && !strings.HasSuffix(key, "/") {
		key += "/"
	}
	return c.listPrefix(ctx, dir, bucket, key)
}

// S3ObjectExists reports whether an object is stored under exactly url.
func S3ObjectExists(ctx context.Context, url string) (bool, error) {
	if err := checkAllowed(url); err != nil {
		return false, err
	}
	bucket, key, err := parseS3(url)
	if err != nil {
		return false, err
	}
	if key == "" {
		return false, nil
	}
	c, err := s3ClientFor()
	if err != nil {
		return false, err
	}
	_, err = c.core.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
	if err == nil {
		return true, nil
	}
	if r := minio.ToErrorResponse(err); r.Code == minio.NoSuchKey || r.StatusCode == http.StatusNotFound {
		return false, nil
	}
	return false, c.explain(url, err)
}

// RemoveS3Objects deletes the objects at urls (all in one bucket),
// batching the requests; objects already gone are no error.
func RemoveS3Objects(ctx context.Context, urls []string) error {
	if len(urls) == 0 {
		return nil
	}
	c, err := s3ClientFor()
	if err != nil {
		return err
	}
	bucket, _, err := parseS3(urls[0])
	if err != nil {
		return err
	}
	ch := make(chan minio.ObjectInfo, len(urls))
	for _, u := range urls {
		if err := checkAllowed(u); err != nil {
			return err
		}
		b, key, err := parseS3(u)
		if err != nil {
			return err
		}
		if b != bucket {
			return fmt.Errorf("remove %s: not in bucket %s", u, bucket)
		}
		ch <- minio.ObjectInfo{Key: key}
	}
	close(ch)
	for e := range c.core.Client.RemoveObjects(ctx, bucket, ch, minio.RemoveObjectsOptions{}) {
		if r := minio.ToErrorResponse(e.Err); r.Code == minio.NoSuchKey {
			continue
		}
		return c.explain("s3://"+bucket+"/"+e.ObjectName, e.Err)
	}
	return nil
}

// AbortS3Uploads aborts every open multipart upload under the folder dir
// whose object URL match accepts: the staged files of write attempts that
// never reached their commit or abort (their process died).
func AbortS3Uploads(ctx context.Context, dir string, match func(url string) bool) error {
	if err := checkAllowed(dir); err != nil {
		return err
	}
	bucket, prefix, err := parseS3(dir)
	if err != nil {
		return err
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	c, err := s3ClientFor()
	if err != nil {
		return err
	}
	keyMarker, idMarker := "", ""
	for {
		res, err := c.core.ListMultipartUploads(ctx, bucket, prefix, keyMarker, idMarker, "", 1000)
		if err != nil {
			if r := minio.ToErrorResponse(err); r.Code == "NoSuchUpload" {
				// Some stores (gofakes3) answer so for a bucket that
				// never had an upload: there is none to abort.
				return nil
			}
			return c.explain(dir, err)
		}
		for _, up := range res.Uploads {
			url := "s3://" + bucket + "/" + up.Key
			if !match(url) {
				continue
			}
			if err := c.core.AbortMultipartUpload(ctx, bucket, up.Key, up.UploadID); err != nil {
				if r := minio.ToErrorResponse(err); r.Code != "NoSuchUpload" {
					return c.explain(url, err)
				}
			}
		}
		if !res.IsTruncated || (res.NextKeyMarker == keyMarker && res.NextUploadIDMarker == idMarker) {
			return nil
		}
		keyMarker, idMarker = res.NextKeyMarker, res.NextUploadIDMarker
	}
}

// S3FolderEmpty reports whether no object lies under the folder dir; it
// asks for one key, not the whole listing.
func S3FolderEmpty(ctx context.Context, dir string) (bool, error) {
	if err := checkAllowed(dir); err != nil {
		return false, err
	}
	bucket, key, err := parseS3(dir)
	if err != nil {
		return false, err
	}
	if key != "" && !strings.HasSuffix(key, "/") {
		key += "/"
	}
	c, err := s3ClientFor()
	if err != nil {
		return false, err
	}
	// Leaving the loop early stops the listing's goroutine only through
	// its context.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o, ok := <-c.core.Client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: key, Recursive: true, MaxKeys: 1})
	switch {
	case !ok:
		return true, nil
	case o.Err != nil:
		return false, c.explain(dir, o.Err)
	}
	return false, nil
}
