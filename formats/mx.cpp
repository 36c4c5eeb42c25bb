// placeholder: filled by the mx work
