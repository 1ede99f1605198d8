package write

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"sluice/catalog"
	"sluice/physical"
)

// Writes to object storage (an s3:// target). The commit protocol is the
// local one (see sink.go) with a different temporary file: a task
// stages each file as a multipart upload of the file's final key, left
// open (catalog.S3Upload), and reports the upload's reference in place of
// a temporary name. Open uploads are invisible to listings and reads, and
// every attempt has an upload of its own, so the upload ID is the
// attempt's nonce. The commit completes the chosen attempts' uploads (one
// request per file, no data copied); failed, cancelled and superseded
// attempts' uploads are aborted, by the attempt itself or, when its
// process died, by RemoveLeftovers, which aborts every open upload of
// the write under the target.

// remote reports whether the target is an object store folder.
func (s *Spec) remote() bool { return catalog.IsS3(s.Dir) }

// objectPrefix is the target folder's key prefix, as a URL ending in "/".
func (s *Spec) objectPrefix() string { return strings.TrimSuffix(s.Dir, "/") + "/" }

// checkObjectTarget refuses an s3:// target outside the allowed
// locations, or one that is not a folder under a bucket.
func (s *Spec) checkObjectTarget() error {
	rest := s.Dir[len("s3://"):]
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return fmt.Errorf("write target %s: an s3:// URL names a bucket: s3://bucket/folder", s.Dir)
	}
	if strings.Trim(key, "/") == "" {
		return fmt.Errorf("write target %s: refusing to write to the root of a bucket; name a folder, s3://%s/folder", s.Dir, bucket)
	}
	if p := path.Clean("/" + key); p != "/"+strings.TrimSuffix(key, "/") {
		return fmt.Errorf("write target %s: the key has empty, \".\" or \"..\" segments", s.Dir)
	}
	return catalog.CheckAllowed(s.Dir)
}

// withinFolder reports whether url names an object under the target
// folder, with no segment that a store could resolve elsewhere.
func (s *Spec) withinFolder(url string) bool {
	rel, ok := strings.CutPrefix(url, s.objectPrefix())
	return ok && rel != "" && path.Clean("/"+rel) == "/"+rel
}

// joinKey appends a partition directory (name=value/...) and a file name
// to the target folder's URL.
func (s *Spec) joinKey(dir, name string) string {
	if dir == "" {
		return s.objectPrefix() + name
	}
	return s.objectPrefix() + dir + "/" + name
}

// objectTarget stages a file as an open multipart upload.
type objectTarget struct {
	*catalog.S3Upload
	url string
}

func (t *objectTarget) name() string   { return t.url }
func (t *objectTarget) pending() int64 { return t.Pending() }
func (t *objectTarget) ref() string    { return t.Ref() }
func (t *objectTarget) drop()          { t.Drop() }
func (t *objectTarget) discard()       { _ = t.Abort() }

// commitRequests is how many uploads a commit completes at once.
const commitRequests = 16

// commitObjects publishes the staged files and, with Overwrite, then
// removes every other object under the folder.
func commitObjects(spec *Spec, files []physical.CommitFile) error {
	ctx := context.Background()
	for _, f := range files {
		if !spec.withinFolder(f.Final) || !strings.HasPrefix(path.Base(f.Final), "part-"+spec.WriteID+"-") || !catalog.IsS3UploadRef(f.Temp) {
			return fmt.Errorf("commit: %s is not a file of write %s under %s", f.Final, spec.WriteID, spec.Dir)
		}
	}
	// One request per file, a few at a time: the commit runs under the
	// scheduler's lock, and a partitioned write has many files.
	errs := make([]error, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(commitRequests, len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := catalog.CompleteS3Upload(ctx, files[i].Final, files[i].Temp); err != nil {
					errs[i] = fmt.Errorf("commit %s: %w", files[i].Final, err)
				}
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if !spec.Overwrite {
		return nil
	}
	objs, err := catalog.ListS3(ctx, spec.Dir)
	if err != nil {
		return fmt.Errorf("overwrite %s: %w", spec.Dir, err)
	}
	var old []string
	for _, o := range objs {
		if !strings.HasPrefix(path.Base(o.Path), "part-"+spec.WriteID+"-") {
			old = append(old, o.Path)
		}
	}
	if err := catalog.RemoveS3Objects(ctx, old); err != nil {
		return fmt.Errorf("overwrite %s: %w", spec.Dir, err)
	}
	return nil
}

// removeObjectLeftovers aborts the write's open uploads under the folder
// and, when the write failed, removes the objects it published.
func removeObjectLeftovers(spec *Spec, failed bool) error {
	ctx := context.Background()
	ours := func(url string) bool {
		return spec.withinFolder(url) && strings.HasPrefix(path.Base(url), "part-"+spec.WriteID+"-")
	}
	err := catalog.AbortS3Uploads(ctx, spec.Dir, ours)
	if !failed {
		return err
	}
	objs, lerr := catalog.ListS3(ctx, spec.Dir)
	if lerr != nil {
		return lerr
	}
	var done []string
	for _, o := range objs {
		if ours(o.Path) {
			done = append(done, o.Path)
		}
	}
	if rerr := catalog.RemoveS3Objects(ctx, done); err == nil {
		err = rerr
	}
	return err
}

// checkObjectWriteTarget is CheckTarget for a folder of an object
// store: no object may have the folder's own name, and the folder must be
// empty unless the write appends or overwrites.
func checkObjectWriteTarget(spec *Spec, appendTo bool, statement string) error {
	ctx := context.Background()
	isObject, err := catalog.S3ObjectExists(ctx, spec.Dir)
	if err != nil {
		return fmt.Errorf("%s: %w", statement, err)
	}
	if isObject {
		return fmt.Errorf("%s: %s is an object; the target of a write is a folder of files", statement, spec.Dir)
	}
	if appendTo || spec.Overwrite {
		return nil
	}
	empty, err := catalog.S3FolderEmpty(ctx, spec.Dir)
	if err != nil {
		return fmt.Errorf("%s: %w", statement, err)
	}
	if !empty {
		return fmt.Errorf("%s: folder %s is not empty; %s to replace its contents", statement, spec.Dir, overwriteHint(statement))
	}
	return nil
}

// overwriteHint says how a statement asks to replace a directory's
// contents.
func overwriteHint(statement string) string {
	if statement == "CREATE TABLE" {
		return "add OPTIONS ('overwrite' 'true')"
	}
	return "add the option OVERWRITE true"
}
