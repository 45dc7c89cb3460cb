// Package pkgstest serves local stand-ins for the npm registry and a PyPI
// index (PEP 503 simple API, the JSON API and the PEP 740 integrity API),
// with tarballs and wheels the tests build, so the resolve and install
// stages can be tested without leaving the machine.
package pkgstest
