// placeholder: filled by the ulp work
