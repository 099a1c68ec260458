// `wr_id` in a slot record: on a slot CQ it is the slot itself, which the loop hands over.
typed_verbs::completion_record! {
    struct Recv { slot, wr_id, byte_len }
    max_batch = 8;
}

fn main() {}
