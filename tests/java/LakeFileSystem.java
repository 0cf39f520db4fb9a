package sparkrank.test;

import java.net.URI;
import org.apache.hadoop.fs.RawLocalFileSystem;

/**
 * The local disk under the URI scheme "lake:" (tests only): Hadoop serves lake:///tmp/x from
 * /tmp/x, while Python's open() and pyarrow cannot open "lake:" at all.  A test that reads
 * and writes lake: URIs therefore proves that sparkrank went through Hadoop's FileSystem.
 */
public class LakeFileSystem extends RawLocalFileSystem {
    private static final URI NAME = URI.create("lake:///");

    @Override
    public URI getUri() {
        return NAME;
    }

    @Override
    public String getScheme() {
        return "lake";
    }
}
