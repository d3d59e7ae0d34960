"""The test S3 server (SeaweedFS) itself: a worker's session makes many buckets on it."""


def test_a_new_bucket_takes_its_first_upload_after_sixty_others(s3):
    # Each bucket is a collection with volumes of its own.  Growing 7 volumes per collection (weed's
    # default) filled the server's 400 after 57 buckets, and a later test's first upload to a new
    # bucket failed with INTERNAL_FAILURE; the server now grows one at a time.
    fs = s3.filesystem()
    names = [f"many-buckets-{i:02d}" for i in range(64)]
    try:
        for name in names:
            fs.create_dir(name)
            with fs.open_output_stream(f"{name}/orders-0/00000000000000000000.log") as out:
                out.write(name.encode())
        for name in names:
            with fs.open_input_file(f"{name}/orders-0/00000000000000000000.log") as src:
                assert src.read() == name.encode()
    finally:
        for name in names:
            fs.delete_dir(name)
