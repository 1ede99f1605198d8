package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Object storage: table files at s3://bucket/key URLs, on Amazon S3 or on
// any store speaking its API (MinIO, Ceph, R2...). The client is
// minio-go: a small, well-kept S3 client whose dependencies left the
// versions of arrow-go, gRPC and protobuf this module builds with alone.
//
// It is configured from the environment variables AWS tools use, so
// every process of a cluster (the scheduler lists, executors read) is set
// up the same way: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN (or the profile of ~/.aws/credentials, AWS_PROFILE),
// AWS_REGION (or AWS_DEFAULT_REGION), and AWS_ENDPOINT_URL_S3 or
// AWS_ENDPOINT_URL for an S3-compatible store. With an endpoint, buckets
// are addressed by path (http://host:9000/bucket/key), as such stores
// expect, and plain http is allowed because the endpoint says so; without
// one, requests go to Amazon over https.

// IsS3 reports whether loc is an s3:// URL.
func IsS3(loc string) bool { return strings.HasPrefix(strings.ToLower(loc), "s3://") }

// parseS3 splits an s3:// URL into its bucket and key ("" for the whole
// bucket).
func parseS3(loc string) (bucket, key string, err error) {
	rest := loc[len("s3://"):]
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("%s: an s3:// URL names a bucket: s3://bucket/path", loc)
	}
	return bucket, key, nil
}

// s3Config is what a client is made from; it is read from the environment
// on every use, so a changed environment (tests) gets its own client.
type s3Config struct {
	endpoint, region        string
	keyID, secret, token    string
	profile, sharedCredFile string
}

func s3ConfigFromEnv() s3Config {
	c := s3Config{
		endpoint:       os.Getenv("AWS_ENDPOINT_URL_S3"),
		region:         os.Getenv("AWS_REGION"),
		keyID:          os.Getenv("AWS_ACCESS_KEY_ID"),
		secret:         os.Getenv("AWS_SECRET_ACCESS_KEY"),
		token:          os.Getenv("AWS_SESSION_TOKEN"),
		profile:        os.Getenv("AWS_PROFILE"),
		sharedCredFile: os.Getenv("AWS_SHARED_CREDENTIALS_FILE"),
	}
	if c.endpoint == "" {
		c.endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	if c.region == "" {
		c.region = os.Getenv("AWS_DEFAULT_REGION")
	}
	return c
}

// s3Client is a configured client and what its errors need to say.
type s3Client struct {
	core *minio.Core
	// endpoint is the host requests go to, for errors.
	endpoint string
	// anonymous: no credentials were found, requests are unsigned.
	anonymous bool
	// custom: the endpoint came from AWS_ENDPOINT_URL(_S3).
	custom bool
}

var (
	s3Mu      sync.Mutex
	s3Clients = map[s3Config]*s3Client{}
)

// s3ClientFor returns the client for the current environment.
func s3ClientFor() (*s3Client, error) {
	cfg := s3ConfigFromEnv()
	s3Mu.Lock()
	defer s3Mu.Unlock()
	if c, ok := s3Clients[cfg]; ok {
		return c, nil
	}
	opts := &minio.Options{Region: cfg.region, MaxRetries: 3}
	host := "s3.amazonaws.com"
	opts.Secure = true
	if cfg.endpoint != "" {
		u, err := url.Parse(cfg.endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("AWS_ENDPOINT_URL %q is not an http:// or https:// URL with a host", cfg.endpoint)
		}
		if u.Path != "" && u.Path != "/" {
			return nil, fmt.Errorf("AWS_ENDPOINT_URL %q has a path; give only scheme, host and port", cfg.endpoint)
		}
		host, opts.Secure = u.Host, u.Scheme == "https"
		// S3-compatible stores serve buckets under the path, not as
		// host names.
		opts.BucketLookup = minio.BucketLookupPath
		if opts.Region == "" {
			// Saves a bucket location request per bucket; such stores
			// accept any region in the signature.
			opts.Region = "us-east-1"
		}
	}
	c := &s3Client{endpoint: host, custom: cfg.endpoint != ""}
	switch {
	case cfg.keyID != "" && cfg.secret != "":
		opts.Creds = credentials.NewStaticV4(cfg.keyID, cfg.secret, cfg.token)
	default:
		opts.Creds = credentials.NewFileAWSCredentials(cfg.sharedCredFile, cfg.profile)
		if v, err := opts.Creds.GetWithContext(nil); err != nil || v.AccessKeyID == "" {
			opts.Creds = credentials.NewStaticV4("", "", "")
			c.anonymous = true
		}
	}
	mc, err := minio.New(host, opts)
	if err != nil {
		return nil, fmt.Errorf("s3 client for %s: %w", host, err)
	}
	c.core = &minio.Core{Client: mc}
	s3Clients[cfg] = c
	return c, nil
}

// explain turns a client error about loc into one saying what to do.
func (c *s3Client) explain(loc string, err error) error {
	var ne net.Error
	var ue *url.Error
	if errors.As(err, &ne) || errors.As(err, &ue) {
		hint := "for an S3-compatible store set AWS_ENDPOINT_URL"
		if c.custom {
			hint = "check AWS_ENDPOINT_URL, and that the store is running"
		}
		return fmt.Errorf("%s: cannot reach the object store at %s: %w (%s)", loc, c.endpoint, err, hint)
	}
	r := minio.ToErrorResponse(err)
	creds := "check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
	if c.anonymous {
		creds = "no credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones) on the scheduler and every executor"
	}
	switch r.Code {
	case minio.NoSuchBucket:
		bucket, _, _ := parseS3(loc)
		return fmt.Errorf("%s: bucket %q does not exist at %s", loc, bucket, c.endpoint)
	case minio.NoSuchKey:
		return fmt.Errorf("object %s does not exist", loc)
	case "AccessDenied", "AllAccessDisabled":
		return fmt.Errorf("%s: access denied (%s)", loc, creds)
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "TokenRefreshRequired":
		return fmt.Errorf("%s: the object store refused the credentials: %s (%s)", loc, r.Message, creds)
	case "AuthorizationHeaderMalformed", "PermanentRedirect":
		return fmt.Errorf("%s: %s (set AWS_REGION to the bucket's region)", loc, r.Message)
	}
	if r.StatusCode == http.StatusForbidden {
		return fmt.Errorf("%s: access denied (%s)", loc, creds)
	}
	return fmt.Errorf("%s: %w", loc, err)
}

// s3FS is an object store.
type s3FS struct{}

func (s3FS) list(ctx context.Context, loc, ext string) ([]FileInfo, error) {
	if err := checkAllowed(loc); err != nil {
		return nil, err
	}
	bucket, key, err := parseS3(loc)
	if err != nil {
		return nil, err
	}
	c, err := s3ClientFor()
	if err != nil {
		return nil, err
	}
	prefix := "s3://" + bucket + "/"
	if IsGlob(key) {
		base := globBase(key)
		if base == "." {
			base = ""
		} else {
			base += "/"
		}
		objs, err := c.listPrefix(ctx, loc, bucket, base)
		if err != nil {
			return nil, err
		}
		var out []FileInfo
		for _, o := range objs {
			if ok, err := path.Match(key, strings.TrimPrefix(o.Path, prefix)); err != nil {
				return nil, fmt.Errorf("glob %s: %w", loc, err)
			} else if ok {
				out = append(out, o)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("no objects match %s", loc)
		}
		return out, nil
	}
	if key != "" && !strings.HasSuffix(key, "/") {
		// One object, or a "directory": a prefix written without its
		// trailing slash.
		st, err := c.core.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
		if err == nil {
			return []FileInfo{objectInfo(bucket, st)}, nil
		}
		if r := minio.ToErrorResponse(err); r.Code != minio.NoSuchKey && r.StatusCode != http.StatusNotFound {
			return nil, c.explain(loc, err)
		}
		key += "/"
	}
	objs, err := c.listPrefix(ctx, loc, bucket, key)
	if err != nil {
		return nil, err
	}
	var out []FileInfo
	for _, o := range objs {
		if strings.HasSuffix(strings.ToLower(o.Path), ext) {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		if len(objs) == 0 && !strings.HasSuffix(loc, "/") {
			return nil, fmt.Errorf("object %s does not exist, and no objects are under %s/", loc, loc)
		}
		return nil, fmt.Errorf("no *%s objects under %s", ext, loc)
	}
	return out, nil
}

// listPrefix returns every object under prefix (recursively), sorted by
// key. Keys ending in "/" are folder markers, not files.
func (c *s3Client) listPrefix(ctx context.Context, loc, bucket, prefix string) ([]FileInfo, error) {
	var out []FileInfo
	for o := range c.core.Client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, c.explain(loc, o.Err)
		}
		if strings.HasSuffix(o.Key, "/") {
			continue
		}
		out = append(out, objectInfo(bucket, o))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func objectInfo(bucket string, o minio.ObjectInfo) FileInfo {
	return FileInfo{Path: "s3://" + bucket + "/" + o.Key, Size: o.Size, ModTime: o.LastModified.UnixNano(), ETag: trimETag(o.ETag)}
}

func trimETag(e string) string { return strings.Trim(e, `"`) }

func (s3FS) openAt(ctx context.Context, f FileInfo) (RandomReader, error) {
	o, err := openObject(f)
	if err != nil {
		return nil, err
	}
	o.ctx = ctx
	return o, nil
}

func (s3FS) open(ctx context.Context, f FileInfo) (io.ReadCloser, error) {
	o, err := openObject(f)
	if err != nil {
		return nil, err
	}
	body, err := o.get(ctx, 0, -1)
	if err != nil {
		return nil, err
	}
	return body, nil
}

func openObject(f FileInfo) (*s3Object, error) {
	if err := checkAllowed(f.Path); err != nil {
		return nil, err
	}
	bucket, key, err := parseS3(f.Path)
	if err != nil {
		return nil, err
	}
	c, err := s3ClientFor()
	if err != nil {
		return nil, err
	}
	return &s3Object{c: c, bucket: bucket, key: key, info: f, ctx: context.Background()}, nil
}

// s3TailBytes is how much of an object's end the first read near the end
// fetches: a Parquet reader reads the last 8 bytes (footer length and
// magic) and then the footer just before them, and one request for both
// halves the requests of opening a file.
const s3TailBytes = 64 << 10

// s3Object reads one object by ranged GET requests: each ReadAt is one
// request for exactly the bytes asked for (a Parquet column chunk), so a
// query reading one column downloads that column and the footer, not the
// file. Every response must carry the entity tag the object had when it
// was listed; another one means the object was written again since.
type s3Object struct {
	c           *s3Client
	bucket, key string
	info        FileInfo
	ctx         context.Context

	mu      sync.Mutex
	tail    []byte // the object's last len(tail) bytes, once read
	seekPos int64
}

// Size implements RandomReader.
func (o *s3Object) Size() int64 { return o.info.Size }

// Close implements io.Closer; an object holds no connection between reads.
func (o *s3Object) Close() error { return nil }

// Seek implements io.Seeker (the Parquet reader finds the size by seeking
// to the end).
func (o *s3Object) Seek(offset int64, whence int) (int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += o.seekPos
	case io.SeekEnd:
		offset += o.info.Size
	default:
		return 0, fmt.Errorf("seek: bad whence %d", whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("seek %s: negative position", o.info.Path)
	}
	o.seekPos = offset
	return offset, nil
}

// ReadAt implements io.ReaderAt.
func (o *s3Object) ReadAt(p []byte, off int64) (int, error) {
	size := o.info.Size
	if off < 0 {
		return 0, fmt.Errorf("read %s: negative offset", o.info.Path)
	}
	if off >= size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), size-off)
	if tail := o.tailFor(off); tail != nil {
		n := copy(p[:want], tail[off-(size-int64(len(tail))):])
		return o.short(n, len(p))
	}
	body, err := o.get(o.ctx, off, off+want-1)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	n, err := io.ReadFull(body, p[:want])
	if err != nil {
		return n, fmt.Errorf("read %s at %d: %w", o.info.Path, off, err)
	}
	return o.short(n, len(p))
}

// short is ReadAt's result for n bytes read of asked: io.EOF when the
// object ended first.
func (o *s3Object) short(n, asked int) (int, error) {
	if n < asked {
		return n, io.EOF
	}
	return n, nil
}

// tailFor returns the object's cached tail when off falls in it, fetching
// it on the first read within s3TailBytes of the end.
func (o *s3Object) tailFor(off int64) []byte {
	size := o.info.Size
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tail == nil && off >= size-s3TailBytes {
		start := max(0, size-s3TailBytes)
		body, err := o.get(o.ctx, start, size-1)
		if err != nil {
			return nil // the plain read that follows reports it
		}
		defer body.Close()
		buf := make([]byte, size-start)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil
		}
		o.tail = buf
	}
	if o.tail != nil && off >= size-int64(len(o.tail)) {
		return o.tail
	}
	return nil
}

// get requests bytes [start, end] of the object (end -1: to its end),
// checking that it is still the object listed.
func (o *s3Object) get(ctx context.Context, start, end int64) (io.ReadCloser, error) {
	var opts minio.GetObjectOptions
	if end >= 0 {
		if err := opts.SetRange(start, end); err != nil {
			return nil, err
		}
	}
	if o.info.ETag != "" {
		// Stores that honour If-Match refuse a changed object
		// themselves; the check below covers the others.
		_ = opts.SetMatchETag(o.info.ETag)
	}
	body, st, _, err := o.c.core.GetObject(ctx, o.bucket, o.key, opts)
	if err != nil {
		r := minio.ToErrorResponse(err)
		if r.Code == "PreconditionFailed" || (o.info.ETag != "" && r.Code == minio.NoSuchKey) {
			return nil, o.changed()
		}
		return nil, o.c.explain(o.info.Path, err)
	}
	if o.info.ETag != "" && trimETag(st.ETag) != o.info.ETag {
		body.Close()
		return nil, o.changed()
	}
	return body, nil
}

// ErrFilesChanged is wrapped by the error of a read of an object that was
// written again or removed after the table was opened.
var ErrFilesChanged = errors.New("files changed")

func (o *s3Object) changed() error {
	return fmt.Errorf("%s: %w since the table was opened (the object was written again or removed); run CREATE EXTERNAL TABLE again, or the query for a table read by path", o.info.Path, ErrFilesChanged)
}
