//! `#[derive(Config)]` for proem-sdk (use it as `proem_sdk::Config`; this
//! crate is an implementation detail of the SDK).
//!
//! The derive writes one `impl proem_sdk::Config` for a struct with named
//! fields: `SCHEMA`, the type's JSON Schema as a constant tree the SDK
//! turns into bytes at compile time, and `from_config`, which reads a
//! config value into the struct, naming the path of whatever does not fit.
//! Both come from the same field list, so the schema proem checks at load
//! and the parser a hook runs cannot disagree. It emits no custom section:
//! only `register_plugin!(P, config = T)` does, once per component.
//!
//! The field types are checked here, by their syntax: `String`, `bool`,
//! `i8`-`i64`, `u8`-`u64`, `f64`, `Vec<T>`, `Option<T>` (a field only) and
//! any other named type, which must derive `Config` itself (else rustc
//! refuses it at the field, with the SDK's message). Anything else is a
//! compile error naming the field and the supported types.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, GenericArgument, PathArguments, Type};

/// What a field of a `#[derive(Config)]` struct may be, as error messages say it.
const SUPPORTED: &str = "String, bool, i8, i16, i32, i64, u8, u16, u32, u64, f64, Vec<T>, Option<T> \
                         (a setting that may be left out) or a struct that derives Config";

/// Primitive types that look like settings but have no place in the
/// schema subset proem checks (or differ between the wasm build and a
/// native test): refused at the field, with the fix, rather than by a trait
/// error. Only primitives: a name such as `Value` or `Box` may be the
/// author's own struct deriving Config (a macro cannot resolve a path),
/// so those are left to the trait, whose error says what to use.
const REFUSED: &[(&str, &str)] = &[
    ("usize", "use u32 or u64; usize is 32 bits in wasm and 64 natively"),
    ("isize", "use i32 or i64; isize is 32 bits in wasm and 64 natively"),
    ("u128", "use u64; a config number is at most 64 bits"),
    ("i128", "use i64; a config number is at most 64 bits"),
    ("f32", "use f64"),
    ("char", "use String"),
    ("str", "use String"),
];

/// Derives `proem_sdk::Config`: the struct's JSON Schema (doc comments as
/// `description`, integer ranges as `minimum`/`maximum`, `Option` fields
/// not `required`, `additionalProperties: false`) and its parser.
#[proc_macro_derive(Config)]
pub fn derive_config(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}

/// One field, as the derive sees it.
struct FieldPlan {
    name: syn::Ident,
    /// The property's name in the config: the field's, without `r#`.
    key: String,
    doc: String,
    /// The type the value is read as (`T` of an `Option<T>`).
    ty: Type,
    optional: bool,
}

fn expand(input: &DeriveInput) -> syn::Result<Tokens> {
    let fields = named_fields(input)?;
    let plans = every_field(&fields)?;
    let name = &input.ident;
    let doc = doc_text(&input.attrs);
    let schema_fields = plans.iter().map(|p| {
        let (key, doc, ty, required) = (&p.key, &p.doc, &p.ty, !p.optional);
        quote_spanned! {ty.span()=>
            ::proem_sdk::__private::Field {
                name: #key,
                description: #doc,
                required: #required,
                schema: &<#ty as ::proem_sdk::Config>::SCHEMA,
            }
        }
    });
    let reads = plans.iter().map(|p| {
        let (field, key) = (&p.name, &p.key);
        let read = if p.optional { quote!(optional) } else { quote!(required) };
        quote! { #field: ::proem_sdk::__private::#read(map, #key, path)? }
    });
    Ok(quote! {
        impl ::proem_sdk::Config for #name {
            const SCHEMA: ::proem_sdk::__private::Schema = ::proem_sdk::__private::Schema::Object {
                description: #doc,
                fields: &[#(#schema_fields),*],
            };

            fn from_config(
                value: &::proem_sdk::serde_json::Value,
                path: &str,
            ) -> ::core::result::Result<Self, ::proem_sdk::ConfigError> {
                let map = ::proem_sdk::__private::object(value, path, &<Self as ::proem_sdk::Config>::SCHEMA)?;
                ::core::result::Result::Ok(#name { #(#reads),* })
            }
        }
    })
}

/// Each field's plan, or every field's error at once.
fn every_field(fields: &[syn::Field]) -> syn::Result<Vec<FieldPlan>> {
    let (mut plans, mut errors) = (Vec::new(), None::<syn::Error>);
    for field in fields {
        match (plan(field), &mut errors) {
            (Ok(p), _) => plans.push(p),
            (Err(e), Some(all)) => all.combine(e),
            (Err(e), None) => errors = Some(e),
        }
    }
    errors.map_or(Ok(plans), Err)
}

/// The named fields of a struct without generic parameters, or why not.
fn named_fields(input: &DeriveInput) -> syn::Result<Vec<syn::Field>> {
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            "derive(Config): a config struct has no generic parameters (its schema is fixed at compile time)",
        ));
    }
    match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => Ok(named.named.iter().cloned().collect()),
            _ => Err(syn::Error::new(
                input.ident.span(),
                "derive(Config) is for a struct with named fields: each field is a setting, named by the field",
            )),
        },
        _ => Err(syn::Error::new(
            input.ident.span(),
            "derive(Config) is for a struct with named fields (an enum or union has no JSON Schema here)",
        )),
    }
}

fn plan(field: &syn::Field) -> syn::Result<FieldPlan> {
    let name = field.ident.clone().ok_or_else(|| syn::Error::new(field.span(), "a field without a name"))?;
    let key = name.to_string().trim_start_matches("r#").to_string();
    let (ty, optional) = match generic_of(&field.ty, "Option") {
        Some(inner) => (inner.clone(), true),
        None => (field.ty.clone(), false),
    };
    check_type(&ty, &key)?;
    Ok(FieldPlan { name, key, doc: doc_text(&field.attrs), ty, optional })
}

/// Refuses a type the schema cannot say, naming the field `key`; `Vec<T>`
/// is checked through to `T`. `Option<T>` is for a field itself only: a
/// list item or an option of an option cannot be left out.
fn check_type(ty: &Type, key: &str) -> syn::Result<()> {
    let Type::Path(path) = ty else {
        return Err(unsupported(ty.span(), key, "this kind of type"));
    };
    if path.qself.is_some() {
        return Err(unsupported(ty.span(), key, "a qualified path"));
    }
    let Some(last) = path.path.segments.last() else {
        return Err(unsupported(ty.span(), key, "an empty path"));
    };
    let ident = last.ident.to_string();
    if ident == "Option" {
        return Err(syn::Error::new(
            ty.span(),
            format!(
                "derive(Config): field `{key}`: Option<T> is for a field (a setting that may be left out), \
                 not inside another type; supported: {SUPPORTED}"
            ),
        ));
    }
    if let Some((_, fix)) = REFUSED.iter().find(|(name, _)| *name == ident) {
        return Err(unsupported(ty.span(), key, &format!("`{ident}` ({fix})")));
    }
    match generic_of(ty, "Vec") {
        Some(item) => check_type(item, key),
        None if matches!(last.arguments, PathArguments::None) => Ok(()),
        None => Err(unsupported(ty.span(), key, &format!("`{ident}<…>`"))),
    }
}

fn unsupported(span: Span, key: &str, what: &str) -> syn::Error {
    syn::Error::new(
        span,
        format!("derive(Config): field `{key}` is {what}, which a config cannot hold; supported: {SUPPORTED}"),
    )
}

/// `T` when `ty` is `wrapper<T>` (by its last path segment).
fn generic_of<'t>(ty: &'t Type, wrapper: &str) -> Option<&'t Type> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != wrapper {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else { return None };
    match args.args.iter().collect::<Vec<_>>().as_slice() {
        [GenericArgument::Type(inner)] => Some(inner),
        _ => None,
    }
}

/// The doc comment as text: lines trimmed, a paragraph's lines joined by
/// spaces, paragraphs by a blank line.
fn doc_text(attrs: &[syn::Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value().trim().to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let paragraphs: Vec<String> =
        lines.split(|line| line.is_empty()).filter(|p| !p.is_empty()).map(|p| p.join(" ")).collect();
    paragraphs.join("\n\n")
}
