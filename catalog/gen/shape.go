package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// leafPrefix is the import path of the module whose types are leaves of a shape
// (Time, Quantity, ObjectMeta, ...): their fields are the machinery's, not the API's.
const leafPrefix = "k8s.io/apimachinery/"

// shape is what the Go source of one release says of one API type: the JSON path of
// every field (property names, "[]" for list items, "{}" for map values, joined with
// "."); for fields of a named string type, the values of the type's constants, and
// whether the type is marked +enum (Kubernetes added the markers in 1.23, to types
// whose constants were already the only valid values).
type shape struct {
	fields map[string]bool
	values map[string][]string
	enums  map[string]bool
	// blankable are the fields whose empty value is their absence: an omitempty
	// string, not a pointer. Kubernetes' validation takes "" there as unset (a
	// toleration's operator "" is Equal, its effect "" every effect).
	blankable map[string]bool
}

// sourceIndex reads API types from Go source (not by reflection), so that any release
// of k8s.io/api can be read, not only the one this program is built with.
type sourceIndex struct {
	fset *token.FileSet
	// dir returns the directory of a package's source ("" if unknown).
	dir  func(importPath string) string
	pkgs map[string]*sourcePackage
}

// sourcePackage is one parsed package: its type declarations and the string
// constants of each named type.
type sourcePackage struct {
	path   string
	types  map[string]*typeDecl
	consts map[string][]string
}

// typeDecl is a type declaration with what resolving its fields needs.
type typeDecl struct {
	pkg     *sourcePackage
	spec    *ast.TypeSpec
	enum    bool              // marked +enum
	imports map[string]string // the file's imports: name → path
}

func newSourceIndex(dir func(string) string) *sourceIndex {
	return &sourceIndex{fset: token.NewFileSet(), dir: dir, pkgs: map[string]*sourcePackage{}}
}

// shapeOf returns the shape of the API object type named by the Go type t (its package
// path and name; only these are used).
func (x *sourceIndex) shapeOf(t reflect.Type) (*shape, error) {
	d, err := x.lookup(t.PkgPath(), t.Name())
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, fmt.Errorf("%s.%s: no such type in the source", t.PkgPath(), t.Name())
	}
	s := &shape{fields: map[string]bool{}, values: map[string][]string{}, enums: map[string]bool{}, blankable: map[string]bool{}}
	w := &shapeWalker{x: x, out: s, visiting: map[*typeDecl]bool{}}
	if err := w.named(d, "", true); err != nil {
		return nil, fmt.Errorf("%s.%s: %w", t.PkgPath(), t.Name(), err)
	}
	return s, nil
}

// lookup returns the declaration of type name in package path (nil if absent).
func (x *sourceIndex) lookup(path, name string) (*typeDecl, error) {
	p, err := x.load(path)
	if err != nil || p == nil {
		return nil, err
	}
	return p.types[name], nil
}

// load parses a package once; apimachinery's packages, and packages whose source the
// index does not have, are nil (their types are leaves).
func (x *sourceIndex) load(path string) (*sourcePackage, error) {
	if strings.HasPrefix(path, leafPrefix) {
		return nil, nil
	}
	if p, ok := x.pkgs[path]; ok {
		return p, nil
	}
	dir := x.dir(path)
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	p := &sourcePackage{path: path, types: map[string]*typeDecl{}, consts: map[string][]string{}}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "zz_generated") || strings.HasPrefix(name, "generated") {
			continue
		}
		file, err := parser.ParseFile(x.fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", filepath.Join(dir, name), err)
		}
		p.add(file)
	}
	x.pkgs[path] = p
	return p, nil
}

// add indexes the type declarations and typed string constants of file.
func (p *sourcePackage) add(file *ast.File) {
	imports := map[string]string{}
	for _, imp := range file.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := filepath.Base(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		imports[name] = path
	}
	for _, decl := range file.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range gd.Specs {
			switch spec := spec.(type) {
			case *ast.TypeSpec:
				doc := spec.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				p.types[spec.Name.Name] = &typeDecl{pkg: p, spec: spec, enum: hasMarker(doc, "+enum"), imports: imports}
			case *ast.ValueSpec:
				p.addConsts(gd.Tok, spec)
			}
		}
	}
}

// addConsts records `Name Type = "value"` constants under Type.
func (p *sourcePackage) addConsts(tok token.Token, spec *ast.ValueSpec) {
	typ, ok := spec.Type.(*ast.Ident)
	if tok != token.CONST || !ok {
		return
	}
	for _, v := range spec.Values {
		if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && !slices.Contains(p.consts[typ.Name], s) {
				p.consts[typ.Name] = append(p.consts[typ.Name], s)
			}
		}
	}
}

// hasMarker reports whether a comment has the line marker (e.g. "+enum").
func hasMarker(doc *ast.CommentGroup, marker string) bool {
	if doc == nil {
		return false
	}
	for _, c := range doc.List {
		if strings.TrimSpace(strings.TrimPrefix(c.Text, "//")) == marker {
			return true
		}
	}
	return false
}

// shapeWalker walks type declarations into a shape.
type shapeWalker struct {
	x        *sourceIndex
	out      *shape
	visiting map[*typeDecl]bool
}

// named walks declaration d found at path; root marks the API object itself.
func (w *shapeWalker) named(d *typeDecl, path string, root bool) error {
	if w.visiting[d] {
		return nil // a recursive type: its fields are already walked above
	}
	w.visiting[d] = true
	defer delete(w.visiting, d)
	if st, ok := d.spec.Type.(*ast.StructType); ok {
		return w.fields(d, st, path, root)
	}
	if id, ok := d.spec.Type.(*ast.Ident); ok && id.Name == "string" {
		if consts := d.pkg.consts[d.spec.Name.Name]; len(consts) > 0 {
			w.out.values[path] = slices.Clone(consts)
		}
		if d.enum {
			w.out.enums[path] = true
		}
		return nil
	}
	return w.expr(d, d.spec.Type, path)
}

// fields walks the JSON fields of a struct declared in d, as encoding/json shapes them.
func (w *shapeWalker) fields(d *typeDecl, st *ast.StructType, path string, root bool) error {
	for _, f := range st.Fields.List {
		tag := ""
		if f.Tag != nil {
			raw, _ := strconv.Unquote(f.Tag.Value)
			tag = reflect.StructTag(raw).Get("json")
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		inline := slices.Contains(strings.Split(opts, ","), "inline") || (len(f.Names) == 0 && name == "")
		if inline {
			if err := w.expr(d, f.Type, path); err != nil {
				return err
			}
			continue
		}
		if name == "" {
			if len(f.Names) == 0 || !f.Names[0].IsExported() {
				continue
			}
			name = f.Names[0].Name
		}
		p := join(path, name)
		if root && name == "metadata" {
			w.out.fields[p] = true // the server's
			continue
		}
		w.out.fields[p] = true
		if _, pointer := f.Type.(*ast.StarExpr); !pointer && slices.Contains(strings.Split(opts, ","), "omitempty") {
			w.out.blankable[p] = true
		}
		if err := w.expr(d, f.Type, p); err != nil {
			return err
		}
	}
	return nil
}

// expr walks a field's type expression (in the file of d) found at path.
func (w *shapeWalker) expr(d *typeDecl, e ast.Expr, path string) error {
	switch e := e.(type) {
	case *ast.StarExpr:
		return w.expr(d, e.X, path)
	case *ast.ArrayType:
		if id, ok := e.Elt.(*ast.Ident); ok && id.Name == "byte" {
			return nil
		}
		p := join(path, "[]")
		w.out.fields[p] = true
		return w.expr(d, e.Elt, p)
	case *ast.MapType:
		p := join(path, "{}")
		w.out.fields[p] = true
		return w.expr(d, e.Value, p)
	case *ast.StructType:
		return w.fields(d, e, path, false)
	case *ast.Ident:
		if next := d.pkg.types[e.Name]; next != nil {
			return w.named(next, path, false)
		}
		return nil // a predeclared type
	case *ast.SelectorExpr:
		pkg, ok := e.X.(*ast.Ident)
		if !ok {
			return nil
		}
		next, err := w.x.lookup(d.imports[pkg.Name], e.Sel.Name)
		if err != nil || next == nil {
			return err // nil: another module's type, a leaf
		}
		return w.named(next, path, false)
	}
	return nil
}

// join appends a path element.
func join(path, elem string) string {
	if path == "" {
		return elem
	}
	return path + "." + elem
}
