//! Procedural macros of typed-verbs. Use them through the `typed_verbs` crate.

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Ident, Token};

/// The flags of ibv_create_cq_ex(3), in the order of `WcFlagSet`'s parameters.
const FLAGS: [&str; 11] = [
    "BYTE_LEN",
    "IMM",
    "QP_NUM",
    "SRC_QP",
    "SLID",
    "SL",
    "DLID_PATH_BITS",
    "COMPLETION_TIMESTAMP",
    "CVLAN",
    "FLOW_TAG",
    "COMPLETION_TIMESTAMP_WALLCLOCK",
];

/// How many of `FLAGS` make up `STANDARD` (IBV_WC_STANDARD_FLAGS).
const STANDARD: usize = 7;

struct FlagList(Punctuated<Ident, Token![|]>);

impl Parse for FlagList {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        Ok(FlagList(Punctuated::parse_terminated(input)?))
    }
}

/// `wc_flags!(BYTE_LEN | IMM)`: the `typed_verbs::WcFlagSet` type with those flags.
/// See the re-export in `typed_verbs` for the names.
#[proc_macro]
pub fn wc_flags(input: TokenStream) -> TokenStream {
    let list = syn::parse_macro_input!(input as FlagList);
    let mut on = [false; 11];
    let mut errors: Option<syn::Error> = None;
    for id in list.0.iter() {
        let name = id.to_string();
        let name = name.strip_prefix("IBV_WC_EX_WITH_").unwrap_or(&name);
        if name == "STANDARD" {
            on[..STANDARD].iter_mut().for_each(|b| *b = true);
        } else if let Some(i) = FLAGS.iter().position(|f| *f == name) {
            on[i] = true;
        } else {
            let e = syn::Error::new(
                id.span(),
                format!(
                    "unknown wc flag `{name}`: the flags of ibv_create_cq_ex are {}, and STANDARD",
                    FLAGS.join(", ")
                ),
            );
            match &mut errors {
                Some(all) => all.combine(e),
                None => errors = Some(e),
            }
        }
    }
    let krate = crate_ident();
    let mut args: Vec<proc_macro2::TokenStream> = on.iter().map(|b| quote!(#b)).collect();
    if let Some(e) = errors {
        // Report the error, but still expand to a valid flag set (of the known names), so the
        // unknown name is the only error the user sees.
        let err = e.to_compile_error();
        let first = on[0];
        args[0] = quote!({ #err; #first });
    }
    quote!(::#krate::WcFlagSet<#(#args),*>).into()
}

/// The ops of ibv_create_qp_ex's `send_ops_flags` that typed-verbs offers, in the order of
/// `SendOpSet`'s parameters (verbs.h's `enum ibv_qp_create_send_ops_flags`).
const SEND_OPS: [&str; 7] = [
    "RDMA_WRITE",
    "RDMA_WRITE_WITH_IMM",
    "SEND",
    "SEND_WITH_IMM",
    "RDMA_READ",
    "ATOMIC_CMP_AND_SWP",
    "ATOMIC_FETCH_AND_ADD",
];

/// The other ops of verbs.h: known, but without a typed builder here.
const SEND_OPS_NOT_OFFERED: [&str; 6] = [
    "LOCAL_INV",
    "BIND_MW",
    "SEND_WITH_INV",
    "TSO",
    "FLUSH",
    "ATOMIC_WRITE",
];

/// `send_ops!(SEND | RDMA_WRITE)`: the `typed_verbs::qp::ex::SendOpSet` type with those ops.
/// See the re-export in `typed_verbs` for the names.
#[proc_macro]
pub fn send_ops(input: TokenStream) -> TokenStream {
    let list = syn::parse_macro_input!(input as FlagList);
    let mut on = [false; 7];
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    for id in list.0.iter() {
        let name = id.to_string();
        let name = name.strip_prefix("IBV_QP_EX_WITH_").unwrap_or(&name);
        if let Some(i) = SEND_OPS.iter().position(|f| *f == name) {
            on[i] = true;
        } else if SEND_OPS_NOT_OFFERED.contains(&name) {
            push(syn::Error::new(
                id.span(),
                format!(
                    "send op `{name}` has no typed builder in typed-verbs (no memory windows, invalidation, TSO, FLUSH or atomic write): the ops offered are {}",
                    SEND_OPS.join(", ")
                ),
            ));
        } else {
            push(syn::Error::new(
                id.span(),
                format!(
                    "unknown send op `{name}`: the ops of ibv_create_qp_ex's send_ops_flags offered here are {}",
                    SEND_OPS.join(", ")
                ),
            ));
        }
    }
    if list.0.is_empty() {
        push(syn::Error::new(
            Span::call_site(),
            "an extended QP needs at least one send op: name the ops it will post, e.g. `send_ops!(SEND | RDMA_WRITE)` (ibv_create_qp_ex: send_ops_flags \"should be set to the OR of the work request types that will be posted\")",
        ));
    }
    let krate = crate_ident();
    let mut args: Vec<proc_macro2::TokenStream> = on.iter().map(|b| quote!(#b)).collect();
    if let Some(e) = errors {
        let err = e.to_compile_error();
        let first = on[0];
        args[0] = quote!({ #err; #first });
    }
    quote!(::#krate::qp::ex::SendOpSet<#(#args),*>).into()
}

/// The name the calling crate gives typed-verbs: the key of the dependency in its Cargo.toml
/// (`tv = { package = "typed-verbs", .. }` names it `tv`), found with `proc-macro-crate`; else
/// (typed-verbs's own tests, examples and doctests, or a caller that reaches the macros through
/// another crate) `typed_verbs`.
fn crate_ident() -> Ident {
    use proc_macro_crate::{crate_name, FoundCrate};
    match crate_name("typed-verbs") {
        Ok(FoundCrate::Name(name)) => Ident::new(&name, Span::call_site()),
        Ok(FoundCrate::Itself) | Err(_) => Ident::new("typed_verbs", Span::call_site()),
    }
}

/// The generated code names the crate by its absolute path, `::typed_verbs::...`: rewrites each
/// `typed_verbs` after `::` to the caller's name for the crate ([`crate_ident`]). The generated
/// code has no other `::typed_verbs`, and what it copies from the declaration (names, docs,
/// visibilities) names no crate.
fn in_callers_crate(tokens: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    let krate = crate_ident();
    if krate == "typed_verbs" {
        return tokens;
    }
    rename(tokens, &krate)
}

fn rename(tokens: proc_macro2::TokenStream, krate: &Ident) -> proc_macro2::TokenStream {
    use proc_macro2::{Group, Spacing, TokenTree};
    let mut out: Vec<TokenTree> = Vec::new();
    for tt in tokens {
        let tt = match tt {
            TokenTree::Group(g) => {
                let mut inner = Group::new(g.delimiter(), rename(g.stream(), krate));
                inner.set_span(g.span());
                TokenTree::Group(inner)
            }
            TokenTree::Ident(id) if id == "typed_verbs" => {
                let n = out.len();
                let after_leading_colons = n >= 2
                    && matches!(&out[n - 2], TokenTree::Punct(p) if p.as_char() == ':' && p.spacing() == Spacing::Joint)
                    && matches!(&out[n - 1], TokenTree::Punct(p) if p.as_char() == ':');
                if after_leading_colons {
                    TokenTree::Ident(Ident::new(&krate.to_string(), id.span()))
                } else {
                    TokenTree::Ident(id)
                }
            }
            tt => tt,
        };
        out.push(tt);
    }
    out.into_iter().collect()
}

/// One completion field a record may declare.
struct Field {
    /// The name in a record (and of the `Completion` method that reads it).
    name: &'static str,
    /// Its Rust type, under `::typed_verbs`.
    ty: &'static str,
    /// The flag trait the CQ's `wc_flags` need for it, if any.
    flag: Option<&'static str>,
    /// Valid in a success record, in an error record.
    success: bool,
    error: bool,
    /// How the legacy `ibv_wc` path reads it (`s`: the success view, `w`: the entry), if it can.
    legacy: Option<&'static str>,
}

/// The field that makes a record a slot record: the owned slot the completion hands back.
const SLOT: &str = "slot";

const FIELDS: &[Field] = &[
    Field {
        name: SLOT,
        ty: "::typed_verbs::Slot<'s>",
        flag: None,
        success: true,
        error: true,
        legacy: None,
    },
    Field {
        name: "wr_id",
        ty: "u64",
        flag: None,
        success: true,
        error: true,
        legacy: Some("w.wr_id()"),
    },
    Field {
        name: "status",
        ty: "WcStatus",
        flag: None,
        success: true,
        error: true,
        legacy: Some("w.status()"),
    },
    Field {
        name: "vendor_err",
        ty: "u32",
        flag: None,
        success: false,
        error: true,
        legacy: Some("w.vendor_err()"),
    },
    Field {
        name: "opcode",
        ty: "WcOpcode",
        flag: None,
        success: true,
        error: false,
        legacy: Some("s.opcode()"),
    },
    Field {
        name: "completion_flags",
        ty: "u32",
        flag: None,
        success: true,
        error: false,
        legacy: Some("s.wc_flags()"),
    },
    Field {
        name: "byte_len",
        ty: "u32",
        flag: Some("WithByteLen"),
        success: true,
        error: false,
        legacy: Some("s.byte_len()"),
    },
    Field {
        name: "imm_data",
        ty: "Option<u32>",
        flag: Some("WithImm"),
        success: true,
        error: false,
        legacy: Some("s.imm_data()"),
    },
    Field {
        name: "invalidated_rkey",
        ty: "Option<u32>",
        flag: Some("WithImm"),
        success: true,
        error: false,
        legacy: Some("s.invalidated_rkey()"),
    },
    Field {
        name: "qp_num",
        ty: "u32",
        flag: Some("WithQpNum"),
        success: true,
        error: false,
        legacy: Some("s.qp_num()"),
    },
    Field {
        name: "src_qp",
        ty: "u32",
        flag: Some("WithSrcQp"),
        success: true,
        error: false,
        legacy: Some("s.src_qp()"),
    },
    Field {
        name: "slid",
        ty: "u32",
        flag: Some("WithSlid"),
        success: true,
        error: false,
        legacy: Some("u32::from(s.slid())"),
    },
    Field {
        name: "sl",
        ty: "u8",
        flag: Some("WithSl"),
        success: true,
        error: false,
        legacy: Some("s.sl()"),
    },
    Field {
        name: "dlid_path_bits",
        ty: "u8",
        flag: Some("WithDlidPathBits"),
        success: true,
        error: false,
        legacy: Some("s.dlid_path_bits()"),
    },
    Field {
        name: "completion_ts",
        ty: "u64",
        flag: Some("WithCompletionTimestamp"),
        success: true,
        error: false,
        legacy: None,
    },
    Field {
        name: "completion_wallclock_ns",
        ty: "u64",
        flag: Some("WithCompletionTimestampWallclock"),
        success: true,
        error: false,
        legacy: None,
    },
    Field {
        name: "cvlan",
        ty: "u16",
        flag: Some("WithCvlan"),
        success: true,
        error: false,
        legacy: None,
    },
    Field {
        name: "flow_tag",
        ty: "u32",
        flag: Some("WithFlowTag"),
        success: true,
        error: false,
        legacy: None,
    },
];

struct Record {
    attrs: Vec<syn::Attribute>,
    vis: syn::Visibility,
    name: Ident,
    fields: Vec<Ident>,
}

impl Parse for Record {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(syn::Attribute::parse_outer)?;
        let vis: syn::Visibility = input.parse()?;
        input.parse::<Token![struct]>()?;
        let name: Ident = input.parse()?;
        let body;
        syn::braced!(body in input);
        let fields = Punctuated::<Ident, Token![,]>::parse_terminated(&body)?;
        Ok(Record {
            attrs,
            vis,
            name,
            fields: fields.into_iter().collect(),
        })
    }
}

struct Declaration {
    success: Record,
    error: Option<Record>,
    max_batch: Option<syn::LitInt>,
    max_batch_span: Span,
}

impl Parse for Declaration {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let success: Record = input.parse()?;
        let mut error = None;
        let mut max_batch = None;
        let max_batch_span = input.span();
        while !input.is_empty() {
            if input.peek(Ident)
                && input
                    .fork()
                    .parse::<Ident>()
                    .map(|i| i == "max_batch")
                    .unwrap_or(false)
            {
                input.parse::<Ident>()?;
                input.parse::<Token![=]>()?;
                max_batch = Some(input.parse::<syn::LitInt>()?);
                input.parse::<Token![;]>()?;
            } else if error.is_none() {
                error = Some(input.parse::<Record>()?);
            } else {
                return Err(
                    input.error("expected `max_batch = N;` after the success and error records")
                );
            }
        }
        Ok(Declaration {
            success,
            error,
            max_batch,
            max_batch_span,
        })
    }
}

fn field_list(f: impl Fn(&Field) -> bool) -> String {
    FIELDS
        .iter()
        .filter(|x| f(x))
        .map(|x| x.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks a record's field names; the fields, or every error at its name's span.
fn check_fields(rec: &Record, error_record: bool) -> syn::Result<Vec<&'static Field>> {
    let mut out: Vec<&'static Field> = Vec::new();
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    for id in &rec.fields {
        let name = id.to_string();
        match FIELDS.iter().find(|f| f.name == name) {
            None if error_record => push(syn::Error::new(
                id.span(),
                format!("unknown field `{name}` for a failed completion: its fields are {}", field_list(|f| f.error)),
            )),
            None => push(syn::Error::new(
                id.span(),
                format!("unknown completion field `{name}`: the fields of a successful completion are {}", field_list(|f| f.success)),
            )),
            Some(f) if error_record && !f.error => push(syn::Error::new(
                id.span(),
                format!(
                    "`{name}` is valid only on a successful completion: a failed completion has only {}; declare `{name}` in the success record",
                    field_list(|f| f.error)
                ),
            )),
            Some(f) if !error_record && !f.success => push(syn::Error::new(
                id.span(),
                format!("`{name}` is set only on failed completions: declare it in the error record (the second struct)"),
            )),
            Some(f) if out.iter().any(|o| o.name == f.name) => {
                push(syn::Error::new(id.span(), format!("field `{name}` is declared twice")))
            }
            Some(f) => out.push(f),
        }
    }
    errors.map_or(Ok(out), Err)
}

fn ty(f: &Field) -> proc_macro2::TokenStream {
    let t: proc_macro2::TokenStream = f.ty.parse().expect("a type");
    match f.ty {
        "WcStatus" | "WcOpcode" => quote!(::typed_verbs::#t),
        _ => t,
    }
}

/// Declares the completion record a program reads from a CQ, and generates its poll functions:
/// monomorphized loops that read exactly the declared fields, checked against the CQ's
/// `wc_flags` at compile time. See the re-export in `typed_verbs` for the syntax.
#[proc_macro]
pub fn completion_record(input: TokenStream) -> TokenStream {
    let decl = syn::parse_macro_input!(input as Declaration);
    match expand(decl) {
        Ok(t) => in_callers_crate(t).into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn expand(decl: Declaration) -> syn::Result<proc_macro2::TokenStream> {
    let max_batch = match &decl.max_batch {
        None => {
            return Err(syn::Error::new(
                decl.max_batch_span,
                "a completion record needs its batch bound: add `max_batch = N;` (the most completions one poll takes, while the provider holds its CQ lock)",
            ))
        }
        Some(lit) => {
            let n: usize = lit.base10_parse()?;
            if n == 0 {
                return Err(syn::Error::new(
                    lit.span(),
                    "max_batch = 0 would take no completion: the batch bound must be at least 1",
                ));
            }
            n
        }
    };
    let success_fields = check_fields(&decl.success, false);
    let default_error;
    let error_rec = match &decl.error {
        Some(r) => r,
        None => {
            let name = Ident::new(
                &format!("{}Error", decl.success.name),
                decl.success.name.span(),
            );
            let slot_mode = decl.success.fields.iter().any(|i| i == SLOT);
            let default: &[&str] = if slot_mode {
                &["status", "vendor_err", SLOT]
            } else {
                &["wr_id", "status", "vendor_err"]
            };
            let fields = default
                .iter()
                .map(|n| Ident::new(n, Span::call_site()))
                .collect();
            let doc: syn::Attribute = syn::parse_quote!( #[doc = " A failed completion: its work request, status and vendor error."]);
            default_error = Record {
                attrs: vec![doc],
                vis: decl.success.vis.clone(),
                name,
                fields,
            };
            &default_error
        }
    };
    let error_fields = check_fields(error_rec, true);
    let (success_fields, error_fields) = match (success_fields, error_fields) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(mut a), Err(b)) => {
            a.combine(b);
            return Err(a);
        }
        (Err(e), _) | (_, Err(e)) => return Err(e),
    };
    let slot_mode = success_fields.iter().any(|f| f.name == SLOT);
    let ident_of = |rec: &Record, name: &str| rec.fields.iter().find(|i| *i == name).cloned();
    if slot_mode {
        let wr_id = ident_of(&decl.success, "wr_id").or_else(|| ident_of(error_rec, "wr_id"));
        if let Some(id) = wr_id {
            return Err(syn::Error::new(
                id.span(),
                "`wr_id` of a slot completion is the slot itself, which the poll hands over: declare `slot` alone",
            ));
        }
    } else if let Some(id) = ident_of(error_rec, SLOT) {
        return Err(syn::Error::new(
            id.span(),
            "`slot` in the error record needs `slot` in the success record too: every completion of a slot CQ carries a slot",
        ));
    }
    if slot_mode {
        return Ok(expand_slots(
            &decl,
            error_rec,
            &success_fields,
            &error_fields,
            max_batch,
        ));
    }

    let (s_attrs, s_vis, s_name) = (&decl.success.attrs, &decl.success.vis, &decl.success.name);
    let (e_attrs, e_vis, e_name) = (&error_rec.attrs, &error_rec.vis, &error_rec.name);
    let (s_idents, s_types, s_docs) = record_fields(&success_fields, "completion");
    let (e_idents, e_types, e_docs) = record_fields(&error_fields, "failed completion");
    let flag_bounds = flag_bounds(&success_fields);

    let legacy = success_fields
        .iter()
        .chain(&error_fields)
        .all(|f| f.legacy.is_some());
    let legacy_fn = legacy.then(|| {
        let s_reads: Vec<proc_macro2::TokenStream> = success_fields.iter().map(|f| f.legacy.unwrap().parse().unwrap()).collect();
        let e_reads: Vec<proc_macro2::TokenStream> = error_fields.iter().map(|f| f.legacy.unwrap().parse().unwrap()).collect();
        quote! {
            /// Polls a legacy `Cq` once: `ibv_poll_cq` into a stack array of `MAX_BATCH` entries,
            /// then `handler` for each completion taken, in order. Returns how many.
            #[inline]
            pub fn poll_legacy<C, H>(cq: &::typed_verbs::Cq<'_, C>, mut handler: H) -> ::typed_verbs::Result<usize>
            where
                H: FnMut(::core::result::Result<#s_name, #e_name>),
            {
                let mut entries = [const { ::core::mem::MaybeUninit::<::typed_verbs::WorkCompletion>::uninit() }; #max_batch];
                let taken = cq.poll_uninit(&mut entries)?;
                for w in taken {
                    match w.success() {
                        Some(s) => handler(Ok(#s_name { #(#s_idents: #s_reads),* })),
                        None => handler(Err(#e_name { #(#e_idents: #e_reads),* })),
                    }
                }
                Ok(taken.len())
            }

            /// [`poll_legacy`](Self::poll_legacy) with a handler that returns `Result<(), E>`,
            /// for any `E: From<typed_verbs::Error>` (the crate's `Error`,
            /// `Box<dyn std::error::Error>`, `anyhow::Error`, ...): an `Err` is returned at once,
            /// and the completions taken after the one it failed on are dropped.
            #[inline]
            pub fn try_poll_legacy<C, H, E>(cq: &::typed_verbs::Cq<'_, C>, mut handler: H) -> ::core::result::Result<usize, E>
            where
                H: FnMut(::core::result::Result<#s_name, #e_name>) -> ::core::result::Result<(), E>,
                E: ::core::convert::From<::typed_verbs::Error>,
            {
                let mut entries = [const { ::core::mem::MaybeUninit::<::typed_verbs::WorkCompletion>::uninit() }; #max_batch];
                let taken = cq.poll_uninit(&mut entries)?;
                for w in taken {
                    match w.success() {
                        Some(s) => handler(Ok(#s_name { #(#s_idents: #s_reads),* }))?,
                        None => handler(Err(#e_name { #(#e_idents: #e_reads),* }))?,
                    }
                }
                Ok(taken.len())
            }
        }
    });

    let r_name = Ident::new(&format!("{s_name}Ref"), s_name.span());
    let r_doc = format!(
        " A successful completion as [`{s_name}::poll`] hands it over: a view of the batch's current completion with exactly the declared fields, each read from the provider when its method is called. [`to_record`]({r_name}::to_record) reads them all into a [`{s_name}`]."
    );
    let (poll_step, try_step, poll_result) = loop_parts();
    Ok(quote! {
        #(#s_attrs)*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #s_vis struct #s_name {
            #(
                #[doc = #s_docs]
                pub #s_idents: #s_types,
            )*
        }

        #(#e_attrs)*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #e_vis struct #e_name {
            #(
                #[doc = #e_docs]
                pub #e_idents: #e_types,
            )*
        }

        /// A failed completion, as an error: in a `try_poll` handler, `let c = c?;` hands it on.
        impl ::core::fmt::Display for #e_name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                ::core::write!(f, "work completion failed: {:?}", self)
            }
        }

        impl ::std::error::Error for #e_name {}

        #[doc = #r_doc]
        #s_vis struct #r_name<'b, F: ::typed_verbs::WcFlags>(::typed_verbs::Completion<'b, F, ::typed_verbs::Success>);

        impl<'b, F> #r_name<'b, F>
        where
            F: #flag_bounds ::typed_verbs::WcFlags,
        {
            #(
                #[doc = #s_docs]
                #[inline(always)]
                pub fn #s_idents(&self) -> #s_types {
                    self.0.#s_idents()
                }
            )*

            /// Reads every declared field.
            #[inline(always)]
            pub fn to_record(&self) -> #s_name {
                #s_name { #(#s_idents: self.0.#s_idents()),* }
            }
        }

        impl #s_name {
            /// The most completions one poll takes from the CQ (one batch).
            pub const MAX_BATCH: usize = #max_batch;

            /// Polls one batch from an extended CQ (a `CqEx` or its `Poller`): one
            /// `ibv_start_poll`, an `ibv_next_poll` per further completion up to `MAX_BATCH`,
            /// one `ibv_end_poll` (also if `handler` panics). `handler` gets each completion, in
            /// order: a successful one as a view whose declared fields it reads when and in the
            /// order it needs them (nothing is read that it does not ask for), a failed one as
            /// the error record. Returns how many were taken; 0 when the CQ was empty.
            #[inline]
            pub fn poll<P, H>(cq: &mut P, mut handler: H) -> ::typed_verbs::Result<usize>
            where
                P: ::typed_verbs::cq_ex::Pollable,
                P::Flags: #flag_bounds ::typed_verbs::WcFlags,
                H: for<'b> FnMut(::core::result::Result<#r_name<'b, P::Flags>, #e_name>),
            {
                let polled = ::typed_verbs::cq_ex::Pollable::poll_batch(cq, |mut batch| {
                    // Counts down: one decrement and branch per completion.
                    let mut left = Self::MAX_BATCH;
                    loop {
                        // One call of the handler, so that it is inlined into the loop.
                        handler(match batch.completion().result() {
                            Ok(c) => Ok(#r_name(c)),
                            Err(c) => Err(#e_name { #(#e_idents: c.#e_idents()),* }),
                        });
                        // Only the errno leaves the loop: a small result keeps the loop's registers free
                        // (the error is always ibv_next_poll's errno).
                        #poll_step
                    }
                })?;
                #poll_result
            }

            /// [`poll`](Self::poll) with a handler that returns `Result<(), E>`, for any
            /// `E: From<typed_verbs::Error>` (the crate's `Error`, `Box<dyn std::error::Error>`,
            /// `anyhow::Error`, an error type of the program's own): an `Err` ends the batch at
            /// once (`ibv_end_poll`) and is returned; the completions after the one it failed on
            /// stay in the CQ for the next poll. The failed-completion record is an error
            /// itself, so `let c = c?;` hands a failed work request on.
            #[inline]
            pub fn try_poll<P, H, E>(cq: &mut P, mut handler: H) -> ::core::result::Result<usize, E>
            where
                P: ::typed_verbs::cq_ex::Pollable,
                P::Flags: #flag_bounds ::typed_verbs::WcFlags,
                H: for<'b> FnMut(::core::result::Result<#r_name<'b, P::Flags>, #e_name>) -> ::core::result::Result<(), E>,
                E: ::core::convert::From<::typed_verbs::Error>,
            {
                use ::typed_verbs::cq_ex::PollStop;
                let polled = ::typed_verbs::cq_ex::Pollable::poll_batch(cq, |mut batch| {
                    let mut left = Self::MAX_BATCH;
                    loop {
                        let out = match batch.completion().result() {
                            Ok(c) => handler(Ok(#r_name(c))),
                            Err(c) => handler(Err(#e_name { #(#e_idents: c.#e_idents()),* })),
                        };
                        if let Err(e) = out {
                            return Err(PollStop::Handler(e)); // the batch ends here
                        }
                        #try_step
                    }
                })?;
                ::typed_verbs::cq_ex::try_poll_result(polled)
            }

            #legacy_fn
        }
    })
}

/// The expansion of a slot record (`slot` in the success record): a poll loop over a slot CQ
/// (`SlotPollable`) that hands each completion's slot to the handler, owned.
fn expand_slots(
    decl: &Declaration,
    error_rec: &Record,
    success_fields: &[&'static Field],
    error_fields: &[&'static Field],
    max_batch: usize,
) -> proc_macro2::TokenStream {
    let (s_attrs, s_vis, s_name) = (&decl.success.attrs, &decl.success.vis, &decl.success.name);
    let (e_attrs, e_vis, e_name) = (&error_rec.attrs, &error_rec.vis, &error_rec.name);
    let plain = |fields: &[&'static Field]| -> Vec<&'static Field> {
        fields.iter().copied().filter(|f| f.name != SLOT).collect()
    };
    let (s_idents, s_types, s_docs) = record_fields(&plain(success_fields), "completion");
    let (e_idents, e_types, e_docs) = record_fields(&plain(error_fields), "failed completion");
    let flag_bounds = flag_bounds(success_fields);
    let error_slot = error_fields.iter().any(|f| f.name == SLOT);
    let (e_generics, e_derive, e_slot_field, e_slot_init) = if error_slot {
        (
            quote!(<'s>),
            quote!(#[derive(Debug)]),
            quote! {
                /// The slot of the failed work request, back from the queue.
                pub slot: ::typed_verbs::Slot<'s>,
            },
            quote!(slot,),
        )
    } else {
        (
            quote!(),
            quote!(#[derive(Debug, Clone, Copy, PartialEq, Eq)]),
            quote!(),
            quote!(),
        )
    };
    let r_name = Ident::new(&format!("{s_name}Ref"), s_name.span());
    let r_doc = format!(
        " A successful completion as [`{s_name}::poll`] hands it over: a view of the batch's current completion with exactly the declared fields, each read from the provider when its method is called, and the completion's slot, owned. [`into_record`]({r_name}::into_record) reads them all into a [`{s_name}`]."
    );
    let (poll_step, try_step, poll_result) = loop_parts();
    quote! {
        #(#s_attrs)*
        #[derive(Debug)]
        #s_vis struct #s_name<'s> {
            /// The slot of the work request, back from the queue.
            pub slot: ::typed_verbs::Slot<'s>,
            #(
                #[doc = #s_docs]
                pub #s_idents: #s_types,
            )*
        }

        #(#e_attrs)*
        #e_derive
        #e_vis struct #e_name #e_generics {
            #e_slot_field
            #(
                #[doc = #e_docs]
                pub #e_idents: #e_types,
            )*
        }

        #[doc = #r_doc]
        #s_vis struct #r_name<'b, 's, F: ::typed_verbs::WcFlags> {
            completion: ::typed_verbs::Completion<'b, F, ::typed_verbs::Success>,
            slot: ::typed_verbs::Slot<'s>,
        }

        impl<'b, 's, F> #r_name<'b, 's, F>
        where
            F: #flag_bounds ::typed_verbs::WcFlags,
        {
            #(
                #[doc = #s_docs]
                #[inline(always)]
                pub fn #s_idents(&self) -> #s_types {
                    self.completion.#s_idents()
                }
            )*

            /// The completion's slot.
            #[inline(always)]
            pub fn slot(&self) -> &::typed_verbs::Slot<'s> {
                &self.slot
            }

            /// The completion's slot, owned.
            #[inline(always)]
            pub fn into_slot(self) -> ::typed_verbs::Slot<'s> {
                self.slot
            }

            /// The slot with the completion's byte count: the received bytes, no copy.
            #[inline(always)]
            pub fn received(self) -> ::typed_verbs::Received<'s>
            where
                F: ::typed_verbs::cq_ex::WithByteLen,
            {
                let n = self.completion.byte_len();
                ::typed_verbs::Received::new(self.slot, n)
            }

            /// Reads every declared field, and takes the slot.
            #[inline(always)]
            pub fn into_record(self) -> #s_name<'s> {
                #s_name { #(#s_idents: self.completion.#s_idents(),)* slot: self.slot }
            }
        }

        impl #s_name<'_> {
            /// The most completions one poll takes from the CQ (one batch).
            pub const MAX_BATCH: usize = #max_batch;

            /// Polls one batch from a slot CQ (a `SlotCq` or its `SlotPoller`): one
            /// `ibv_start_poll`, an `ibv_next_poll` per further completion up to `MAX_BATCH`,
            /// one `ibv_end_poll` (also if `handler` panics). `handler` gets each completion,
            /// in order, with its slot, owned: a successful one as a view whose declared fields
            /// it reads when it needs them, a failed one (a flush included) as the error
            /// record. Returns how many were taken; 0 when the CQ was empty.
            #[inline]
            pub fn poll<'s, P, H>(cq: &mut P, mut handler: H) -> ::typed_verbs::Result<usize>
            where
                P: ::typed_verbs::slots::SlotPollable<'s>,
                P::Flags: #flag_bounds ::typed_verbs::WcFlags,
                H: for<'b> FnMut(::core::result::Result<#r_name<'b, 's, P::Flags>, #e_name #e_generics>),
            {
                let polled = ::typed_verbs::slots::SlotPollable::poll_slots(cq, |mut batch| {
                    // Counts down: one decrement and branch per completion.
                    let mut left = Self::MAX_BATCH;
                    loop {
                        // Every completion's slot, converted once by the batch when it entered
                        // the completion.
                        if let ::core::option::Option::Some(slot) = batch.take_slot() {
                            // One call of the handler, so that it is inlined into the loop.
                            handler(match batch.completion().result() {
                                Ok(c) => Ok(#r_name { completion: c, slot }),
                                Err(c) => Err(#e_name { #e_slot_init #(#e_idents: c.#e_idents()),* }),
                            })
                        }
                        #poll_step
                    }
                })?;
                #poll_result
            }

            /// [`poll`](Self::poll) with a handler that returns `Result<(), E>`, for any
            /// `E: From<typed_verbs::Error>`: an `Err` ends the batch at once (`ibv_end_poll`)
            /// and is returned; the completions after the one it failed on stay in the CQ, with
            /// their slots, for the next poll. The failed-completion record is an error itself
            /// (with its slot, where it declares `slot`), so `let c = c?;` hands a failed work
            /// request on.
            #[inline]
            pub fn try_poll<'s, P, H, E>(cq: &mut P, mut handler: H) -> ::core::result::Result<usize, E>
            where
                P: ::typed_verbs::slots::SlotPollable<'s>,
                P::Flags: #flag_bounds ::typed_verbs::WcFlags,
                H: for<'b> FnMut(::core::result::Result<#r_name<'b, 's, P::Flags>, #e_name #e_generics>) -> ::core::result::Result<(), E>,
                E: ::core::convert::From<::typed_verbs::Error>,
            {
                use ::typed_verbs::cq_ex::PollStop;
                let polled = ::typed_verbs::slots::SlotPollable::poll_slots(cq, |mut batch| {
                    let mut left = Self::MAX_BATCH;
                    loop {
                        if let ::core::option::Option::Some(slot) = batch.take_slot() {
                            let out = handler(match batch.completion().result() {
                                Ok(c) => Ok(#r_name { completion: c, slot }),
                                Err(c) => Err(#e_name { #e_slot_init #(#e_idents: c.#e_idents()),* }),
                            });
                            if let Err(e) = out {
                                return Err(PollStop::Handler(e)); // the batch ends here
                            }
                        }
                        #try_step
                    }
                })?;
                ::typed_verbs::cq_ex::try_poll_result(polled)
            }
        }

        /// A failed completion, as an error: in a `try_poll` handler, `let c = c?;` hands it on.
        impl #e_generics ::core::fmt::Display for #e_name #e_generics {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                ::core::write!(f, "work completion failed: {:?}", self)
            }
        }

        impl #e_generics ::std::error::Error for #e_name #e_generics {}
    }
}

/// A record's declared fields as the generated struct declares them: their names, their types
/// and their docs (" `name` of the {what}.").
fn record_fields(
    fields: &[&'static Field],
    what: &str,
) -> (Vec<Ident>, Vec<proc_macro2::TokenStream>, Vec<String>) {
    let idents = fields
        .iter()
        .map(|f| Ident::new(f.name, Span::call_site()))
        .collect();
    let types = fields.iter().map(|f| ty(f)).collect();
    let docs = fields
        .iter()
        .map(|f| format!(" `{}` of the {what}.", f.name))
        .collect();
    (idents, types, docs)
}

/// The `cq_ex` flag traits the success record's fields need of the CQ's flags (each once, in
/// order), as the bounds `Flag1 + Flag2 + ` that the generated `where` clauses start with.
fn flag_bounds(success_fields: &[&'static Field]) -> proc_macro2::TokenStream {
    let mut flags: Vec<&str> = success_fields.iter().filter_map(|f| f.flag).collect();
    flags.sort_unstable();
    flags.dedup();
    let bounds: Vec<Ident> = flags
        .iter()
        .map(|t| Ident::new(t, Span::call_site()))
        .collect();
    quote!(#(::typed_verbs::cq_ex::#bounds +)*)
}

/// What `poll` and `try_poll` of both flavours share: the end of `poll`'s and of `try_poll`'s
/// loop turn ([`batch_step`]) and `poll`'s result ([`poll_result`]).
fn loop_parts() -> (
    proc_macro2::TokenStream,
    proc_macro2::TokenStream,
    proc_macro2::TokenStream,
) {
    (
        batch_step(quote!(e.errno())),
        batch_step(quote!(PollStop::Errno(e.errno()))),
        poll_result(),
    )
}

/// The end of each turn of a generated batch loop (`poll` and `try_poll`, over an extended CQ
/// or a slot CQ): counts the completion, ends the batch at `MAX_BATCH`, else moves to the next
/// completion; `errno` is what the loop returns for ibv_next_poll's error `e`.
fn batch_step(errno: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    quote! {
        left -= 1;
        if left == 0 {
            return Ok(Self::MAX_BATCH); // the batch ends here: ibv_end_poll
        }
        match batch.advance() {
            Ok(::core::option::Option::Some(next)) => batch = next,
            Ok(::core::option::Option::None) => return Ok(Self::MAX_BATCH - left),
            Err(e) => return Err(#errno),
        }
    }
}

/// How a generated `poll` turns what the batch loop returned (`polled`) into its result: the
/// completions taken, an ibv_next_poll error, or 0 for an empty CQ.
fn poll_result() -> proc_macro2::TokenStream {
    quote! {
        match polled {
            ::core::option::Option::Some(Ok(taken)) => Ok(taken),
            ::core::option::Option::Some(Err(errno)) => Err(::typed_verbs::Error {
                verb: ::typed_verbs::Verb::NextPoll,
                kind: ::typed_verbs::ErrorKind::Os(errno),
            }),
            ::core::option::Option::None => Ok(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The declaration docs/poll-loops.md shows; its expansion is macros/docs/poll-loops.expanded.rs
    /// (inside this package, which the test reads alone).
    const EXAMPLE: &str = "
        /// A receive: what the program needs of it.
        pub struct Recv { wr_id, opcode, byte_len, imm_data, qp_num }
        max_batch = 16;
    ";

    /// The chapter shows the code the macro really writes: this fails when they differ, and
    /// `UPDATE_EXPANSION=1 cargo test -p typed-verbs-macros` rewrites the file.
    #[test]
    fn expansion_in_the_docs_is_current() {
        let decl: Declaration = syn::parse_str(EXAMPLE).expect("the example parses");
        let file: syn::File =
            syn::parse2(expand(decl).expect("the example expands")).expect("items");
        let expanded = format!(
            "// What `completion_record!` writes for the declaration in docs/poll-loops.md.\n\
             // Generated by the macros crate's tests (UPDATE_EXPANSION=1); do not edit.\n\n{}",
            prettyplease::unparse(&file)
        );
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/poll-loops.expanded.rs");
        if std::env::var_os("UPDATE_EXPANSION").is_some() {
            std::fs::write(path, &expanded).expect("write the expansion");
        }
        let shown = std::fs::read_to_string(path).unwrap_or_default();
        assert!(shown == expanded, "macros/docs/poll-loops.expanded.rs is stale: run UPDATE_EXPANSION=1 cargo test -p typed-verbs-macros");
    }

    #[test]
    fn errors_name_the_field_and_the_fix() {
        let bad = |src: &str| {
            expand(syn::parse_str::<Declaration>(src).unwrap())
                .unwrap_err()
                .to_string()
        };
        assert!(bad("struct R { wr_id, bytes } max_batch = 1;")
            .starts_with("unknown completion field `bytes`"));
        assert!(bad("struct R { vendor_err } max_batch = 1;")
            .contains("declare it in the error record"));
        assert!(bad("struct R { wr_id } struct E { qp_num } max_batch = 1;")
            .starts_with("`qp_num` is valid only on a successful completion"));
        assert!(bad("struct R { wr_id, wr_id } max_batch = 1;").contains("declared twice"));
        assert!(bad("struct R { wr_id } max_batch = 0;").starts_with("max_batch = 0"));
        assert!(bad("struct R { slot, wr_id } max_batch = 1;")
            .starts_with("`wr_id` of a slot completion"));
        assert!(
            bad("struct R { byte_len } struct E { slot } max_batch = 1;")
                .starts_with("`slot` in the error record needs `slot` in the success record")
        );
        assert!(bad("struct R { wr_id }").contains("add `max_batch = N;`"));
    }
}
