// BIND_MW is an op of verbs.h that typed-verbs has no builder for (no memory windows).
type Bind = typed_verbs::send_ops!(SEND | BIND_MW);

fn main() {
    let _: Option<Bind> = None;
}
