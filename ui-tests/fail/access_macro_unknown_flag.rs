// `access!` names a region's rights by the man page's flag names; a misspelt one is an error
// that lists the valid names. Neighbour: typed_access_rights.
use typed_verbs::{access, Mr, PageBuf};

struct Target<'pd> {
    region: Mr<'pd, PageBuf, access!(REMOTE_WRTE)>,
}

fn main() {
    let _ = std::mem::size_of::<Target<'static>>();
}
