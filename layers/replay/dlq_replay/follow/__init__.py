"""Every replay and every operator move followed to its end, in the stack's table or a local
file. Nothing is imported here: the Lambda loads only the modules it needs.
"""
