// An extended QP for no op at all: send_ops_flags "should be set to the OR of the work request
// types that will be posted".
type Nothing = typed_verbs::send_ops!();

fn main() {
    let _: Option<Nothing> = None;
}
