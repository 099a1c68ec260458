// An error record that declares byte_len: a failed completion has only wr_id, status and
// vendor_err.
use typed_verbs::completion_record;

completion_record! {
    struct Recv { wr_id, byte_len }
    struct RecvError { wr_id, status, byte_len }
    max_batch = 8;
}

fn main() {}
