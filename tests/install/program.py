from maf_host_tools import call

print(call("add", a=40, b=2))
