import torch, torch.nn.functional as F, json
dev="cuda"; H,KV,D,L=32,8,128,32
def t(fn,n=50):
    for _ in range(5): fn()
    s=torch.cuda.Event(enable_timing=True); e=torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize(); s.record()
    for _ in range(n): fn()
    e.record(); torch.cuda.synchronize(); return s.elapsed_time(e)/n
out=[]
for B,N in ((1,4),(2,4),(4,4),(1,16),(1,64),(2,64)):
  for C in (640,1024):
    q=torch.randn(B,H,N,D,device=dev,dtype=torch.bfloat16)
    k=torch.randn(B,H,C+N,D,device=dev,dtype=torch.bfloat16); v=torch.randn_like(k)
    m=torch.ones(B,1,N,C+N,dtype=torch.bool,device=dev)
    tri=torch.rand(N,N,device=dev)<0.5; m[:,:,:,C:]=tri|torch.eye(N,dtype=torch.bool,device=dev)
    a=t(lambda:F.scaled_dot_product_attention(q,k,v))
    b=t(lambda:F.scaled_dot_product_attention(q,k,v,attn_mask=m))
    fm=torch.zeros(B,1,N,C+N,device=dev,dtype=torch.bfloat16).masked_fill(~m,float("-inf"))
    c=t(lambda:F.scaled_dot_product_attention(q,k,v,attn_mask=fm))
    r=dict(batch=B,q_len=N,context=C,nomask_ms=a,boolmask_ms=b,floatmask_ms=c,layers=L,extra_per_forward_ms=(min(b,c)-a)*L)
    out.append(r); print(json.dumps(r))
import os; json.dump(out,open(os.environ["OUT"]+"/mask.json","w"),indent=1)
print(torch.__version__)
